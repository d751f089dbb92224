// Runs one command against a fresh fixture (fake provider + reind), for tests written in
// other languages (the Neovim test):
//
//   node with-daemon.mjs SCRIPT.json [--file NAME=SOURCE]... -- COMMAND ARGS...
//
// SCRIPT.json is the fake provider's script; each --file copies SOURCE into the project
// directory as NAME. The command runs with REIN_HOME, REIN_SOCKET, REIN_BIN (the `rein`
// binary) and REIN_TEST_PROJECT (the project directory) set, and its exit code is ours.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { bin, startFixture } from "./fixture.mjs";

const args = process.argv.slice(2);
const split = args.indexOf("--");
if (split < 1 || split === args.length - 1) {
  console.error("usage: with-daemon.mjs SCRIPT.json [--file NAME=SOURCE]... -- COMMAND ARGS...");
  process.exit(2);
}
const [scriptPath, ...options] = args.slice(0, split);
const command = args.slice(split + 1);
const files = {};
for (let i = 0; i < options.length; i += 2) {
  if (options[i] !== "--file" || !options[i + 1]?.includes("=")) {
    console.error(`unexpected option ${options[i]}`);
    process.exit(2);
  }
  const [name, source] = options[i + 1].split("=", 2);
  files[name] = readFileSync(source, "utf8");
}

const fixture = await startFixture({ script: JSON.parse(readFileSync(scriptPath, "utf8")), files });
const child = spawn(command[0], command.slice(1), {
  stdio: "inherit",
  env: { ...fixture.env, REIN_BIN: bin("rein"), REIN_TEST_PROJECT: fixture.project },
});
const code = await new Promise((done) => child.once("exit", (status) => done(status ?? 1)));
await fixture.stop();
process.exit(code);
