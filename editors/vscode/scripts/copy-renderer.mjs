// Copies markdown-it's browser build into media/, where the chat webview loads it. The
// extension is packaged with `--no-dependencies`, so the renderer has to ship as a media file.

import { copyFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve("markdown-it/package.json"));
copyFileSync(
  join(packageDir, "dist", "browser", "markdown-it.umd.min.js"),
  join(here, "..", "media", "markdown-it.min.js"),
);
