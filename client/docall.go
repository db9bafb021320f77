package client

import (
	"context"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/modules"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// DoWorkCall calls the export named export of the CommonJS module at path
// on a worker, with args: Riot's do-work/call. mods reads the module and
// every module it requires (relative to its base directory); their blobs
// are uploaded, once per client, before the workunit is submitted, so
// workers need no copy and a changed file is a different workunit.
func (c *Client) DoWorkCall(ctx context.Context, mods *modules.Cache, path, export string, args ...any) (*Call, error) {
	mod, err := mods.Load(path)
	if err != nil {
		return nil, fmt.Errorf("client: do-work/call: %w", err)
	}
	if args == nil {
		args = []any{}
	}
	payload, err := value.Encoder{Root: "args"}.Encode(args)
	if err != nil {
		return nil, fmt.Errorf("client: do-work/call: %w", err)
	}
	if err := c.EnsureBlobs(ctx, mod.Blobs); err != nil {
		return nil, fmt.Errorf("client: do-work/call: uploading %s: %w", path, err)
	}
	spec := &workunit.Spec{Kind: workunit.Call, Module: mod.Hash, Export: export, Payload: payload, Blobs: mod.All}
	// Should the tracker have freed the modules (riotd --memory), they go
	// again from the cache.
	return c.submitAs(spec, workunit.Options{}, true, nil, func(ctx context.Context, _ []blob.Hash) error { return c.EnsureBlobs(ctx, mod.Blobs) }), nil
}
