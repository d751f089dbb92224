// The end-to-end fixture shared by the editor tests: a scripted fake model provider
// (`rein-fake-provider`) and a real `reind` with a temporary REIN_HOME whose config.toml
// points at it. Every test gets its own daemon, socket and project directory.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The directory holding `reind`, `rein` and `rein-fake-provider`. */
export const binDir = process.env.REIN_BIN_DIR ?? resolve(here, "..", "..", "target", "debug");

/** The path of one of the workspace binaries. */
export function bin(name) {
  return join(binDir, name);
}

/** Waits until `socket` accepts a connection, or fails after `timeoutMs`. */
async function waitForSocket(socket, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((done) => {
      const probe = connect(socket);
      probe.once("connect", () => {
        probe.destroy();
        done(true);
      });
      probe.once("error", () => done(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`reind did not open ${socket}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** Reads the first stdout line of a child process. */
function firstLine(child) {
  return new Promise((done, fail) => {
    const lines = createInterface({ input: child.stdout });
    lines.once("line", (line) => {
      lines.close();
      done(line.trim());
    });
    child.once("exit", (code) => fail(new Error(`exited with ${code} before printing`)));
  });
}

/**
 * Starts a fake provider replaying `script` (an array of replies, see
 * `tests/src/fake_provider`) and a daemon using it. `files` are written into the project
 * directory first. Returns the paths, the environment for `rein` processes, and `stop()`.
 */
export async function startFixture({ script, files = {}, approvalPolicy = "ask" }) {
  const home = mkdtempSync(join(tmpdir(), "rein-editors-"));
  const project = join(home, "project");
  mkdirSync(project, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(project, name)), { recursive: true });
    writeFileSync(join(project, name), text);
  }
  const scriptPath = join(home, "script.json");
  writeFileSync(scriptPath, JSON.stringify(script));
  const provider = spawn(bin("rein-fake-provider"), [scriptPath], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const baseUrl = await firstLine(provider);
  writeFileSync(
    join(home, "config.toml"),
    [
      'model = "local/test-model"',
      `approval_policy = "${approvalPolicy}"`,
      "[providers.local]",
      'api = "openai-chat"',
      `base_url = "${baseUrl}"`,
      "",
    ].join("\n"),
  );
  const socket = join(home, "run", "reind.sock");
  const env = { ...process.env, REIN_HOME: home, REIN_SOCKET: socket };
  // The daemon's log goes to a file, shown only when it fails to start.
  const logPath = join(home, "reind.stderr");
  const daemon = spawn(bin("reind"), ["--foreground", "--socket", socket], {
    env,
    stdio: ["ignore", "ignore", openSync(logPath, "w")],
  });
  try {
    await waitForSocket(socket, 20000);
  } catch (error) {
    daemon.kill("SIGKILL");
    provider.kill("SIGKILL");
    throw new Error(`${error.message}\n${readFileSync(logPath, "utf8")}`);
  }
  const stopped = (child) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise((done) => child.once("exit", done));
  return {
    home,
    project,
    socket,
    baseUrl,
    env,
    /** Stops the daemon and the provider and removes the state directory. */
    async stop() {
      const daemonGone = stopped(daemon);
      daemon.kill("SIGTERM");
      const timer = setTimeout(() => daemon.kill("SIGKILL"), 5000);
      await daemonGone;
      clearTimeout(timer);
      const providerGone = stopped(provider);
      provider.kill("SIGTERM");
      await providerGone;
      rmSync(home, { recursive: true, force: true });
    },
  };
}
