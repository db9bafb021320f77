import {u} from "./lib/m.mjs"; console.log(u === import.meta.url, import.meta.dirname);
