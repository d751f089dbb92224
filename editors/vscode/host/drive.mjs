// Drives the packaged VS Code extension in a real VS Code host (code-server) through
// headless Chromium, against the daemon and fake provider that with-daemon.mjs started
// (REIN_HOME, REIN_SOCKET, REIN_BIN, REIN_TEST_PROJECT are set). Run by test-host.sh:
//
//   node drive.mjs HOST_DIR VSIX SCREENSHOT_DIR
//
// HOST_DIR holds code-server and puppeteer-core (host/package.json). The run: a prompt from
// the command palette, the streamed answer rendered as Markdown, the edit approval shown as a
// diff and allowed from the diff's title bar, the edited file, then a bash approval answered
// by a second client (a plain socket client) while the chat shows it, and the tool's output.
// Waits have generous deadlines only so that a broken host fails instead of hanging.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [hostDir, vsix, shots] = process.argv.slice(2);
if (!hostDir || !vsix || !shots) {
  console.error("usage: drive.mjs HOST_DIR VSIX SCREENSHOT_DIR");
  process.exit(2);
}
const require = createRequire(join(hostDir, "package.json"));
const puppeteer = require("puppeteer-core");
const { ReinClient } = createRequire(import.meta.url)(join(here, "..", "out", "protocol.js"));
const project = process.env.REIN_TEST_PROJECT;
const codeServer = join(hostDir, "node_modules", ".bin", "code-server");
const chromium = process.env.REIN_CHROMIUM ?? "/usr/bin/chromium";
const step = (text) => console.log(`-- ${text}`);

/** Polls `probe` until it returns a truthy value; fails with `what` after `seconds`. */
async function until(what, probe, seconds = 180) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

const scratch = mkdtempSync(join(tmpdir(), "rein-vscode-host-"));
const userData = join(scratch, "user-data");
const extensions = join(scratch, "extensions");
mkdirSync(join(userData, "User"), { recursive: true });
writeFileSync(
  join(userData, "User", "settings.json"),
  JSON.stringify({
    "rein.path": process.env.REIN_BIN,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "chat.disableAIFeatures": true,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "window.commandCenter": false,
  }),
);

step("installing the .vsix into code-server");
const install = spawnSync(
  codeServer,
  ["--install-extension", vsix, "--extensions-dir", extensions, "--user-data-dir", userData],
  { encoding: "utf8" },
);
assert.equal(install.status, 0, `code-server --install-extension failed:\n${install.stdout}${install.stderr}`);

const port = await freePort();
step(`starting code-server on 127.0.0.1:${port}`);
const serverLog = [];
const server = spawn(
  codeServer,
  [
    "--bind-addr", `127.0.0.1:${port}`,
    "--auth", "none",
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-workspace-trust",
    "--disable-getting-started-override",
    "--user-data-dir", userData,
    "--extensions-dir", extensions,
    project,
  ],
  { env: process.env, stdio: ["ignore", "pipe", "pipe"], detached: true },
);
server.stdout.on("data", (chunk) => serverLog.push(chunk.toString()));
server.stderr.on("data", (chunk) => serverLog.push(chunk.toString()));

let browser;
let page;
let other;
let failed = false;
try {
  await until("code-server to answer", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 120);

  step("opening the workbench in headless Chromium");
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${join(scratch, "chromium")}`,
    ],
    defaultViewport: { width: 1440, height: 900 },
  });
  page = (await browser.pages())[0] ?? (await browser.newPage());
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(project)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 120000 });
  await until("the explorer", () => page.$(".explorer-folders-view"), 120);

  /** Runs a command from the command palette by its title (retried while the palette is still loading). */
  async function runCommand(title) {
    await until(`"${title}" in the palette`, async () => {
      await page.keyboard.press("Escape");
      await page.keyboard.press("F1");
      const input = await page.waitForSelector(".quick-input-widget .quick-input-box input", { visible: true, timeout: 10000 });
      await input.type(title);
      for (let tries = 0; tries < 15; tries++) {
        const labels = await page.$$eval(".quick-input-list .monaco-list-row", (rows) =>
          rows.map((row) => row.getAttribute("aria-label") ?? row.textContent),
        );
        if (labels.some((label) => label.includes(title))) return true;
        await new Promise((done) => setTimeout(done, 200));
      }
      return false;
    }, 120);
    await page.keyboard.press("Enter");
  }

  /** Whether an editor tab whose label contains `label` is open. */
  const tabOpen = async (label) =>
    (await page.$$eval(".tab", (tabs) => tabs.map((tab) => tab.getAttribute("aria-label") ?? ""))).some((l) => l.includes(label));

  /** The chat webview's inner frame. */
  async function chatFrame() {
    return until("the chat view", async () => {
      for (const frame of page.frames()) {
        if (await frame.$("#chat").catch(() => null)) return frame;
      }
      return undefined;
    });
  }

  // A second client: a plain socket client following the same session, as a terminal would.
  other = await ReinClient.connectSocket(process.env.REIN_SOCKET);
  await other.initialize("host-test", true);
  const seen = [];

  step("prompting from the command palette");
  await runCommand("rein: Prompt");
  const promptBox = await page.waitForSelector(".quick-input-widget .quick-input-box input", { visible: true });
  await until("the prompt input", async () => (await page.$eval(".quick-input-widget", (w) => w.textContent)).includes("Ask rein"));
  await promptBox.type("What is the answer? Then fix the first line of notes.txt.");
  await page.keyboard.press("Enter");

  const chat = await chatFrame();
  const sessionId = await until("the session", async () => (await other.listSessions(project))[0]?.session_id);
  await other.subscribe(sessionId, 0, (item) => {
    if (item.event?.kind === "approval_requested") seen.push(item.event);
  });

  step("the answer streams in as Markdown");
  await until("the bold answer", () => chat.$$eval(".assistant strong", (els) => els.some((el) => el.textContent === "42")));
  const answer = await chat.$eval(".assistant .markdown", (el) => ({ text: el.textContent, code: el.querySelector("pre code")?.textContent }));
  assert.ok(!answer.text.includes("**42**"), "the Markdown was shown raw");
  assert.equal(answer.code, "console.log(42);\n");
  assert.ok(await chat.$("details.thinking:not([open])"), "thinking is not collapsed");

  step("the edit approval opens a diff");
  await until("the edit's approval in the chat", () => chat.$$eval(".approval.open", (els) => els.some((el) => el.textContent.includes("edit notes.txt"))));
  assert.ok(await chat.$(".tool.waiting"), "the tool is not marked waiting");
  await until("the diff editor", () => page.$(".monaco-diff-editor .editor.modified .view-lines"));
  await until("the proposed text in the diff", async () =>
    (await page.$eval(".monaco-diff-editor .editor.modified .view-lines", (el) => el.textContent.replace(/\u00a0/g, " "))).includes("edited line"),
  );
  assert.ok(
    (await page.$eval(".monaco-diff-editor .editor.original .view-lines", (el) => el.textContent.replace(/\u00a0/g, " "))).includes("first line"),
  );
  await page.screenshot({ path: join(shots, "vscode-diff.png") });

  step("allowing from the diff's title bar");
  const allow = await page.waitForSelector('.editor-actions [aria-label^="rein: Allow the Proposed Change"]', { visible: true });
  await allow.click();
  await until("the edit's diff to close", async () => !(await tabOpen("notes.txt (proposed by rein)")));
  await until("the edit to run", () => chat.$$eval(".tool.done", (els) => els.some((el) => el.textContent.includes("edit notes.txt"))));
  assert.match(readFileSync(join(project, "notes.txt"), "utf8"), /^edited line/);
  const editApproval = await chat.$$eval(".approval", (els) => els.map((el) => el.textContent));
  assert.ok(editApproval[0].includes("allow_once (rein.vscode)"), editApproval[0]);

  step("a second client answers the write approval: its diff closes and the buttons go");
  await until("the write's diff", () => tabOpen("summary.md (proposed by rein)"));
  await until("the write approval in the chat", () => chat.$$eval(".approval.open", (els) => els.some((el) => el.textContent.includes("write summary.md"))));
  const write = await until("the write approval event", async () => seen.find((event) => event.tool_name === "write"));
  await other.respondApproval(sessionId, write.request_id, "allow_once");
  await until("the chat to show the other client's answer", () =>
    chat.$$eval(".approval", (els) => els.some((el) => el.textContent.includes("write summary.md (allow_once (host-test))"))),
  );
  await until("the write's diff to close", async () => !(await tabOpen("summary.md (proposed by rein)")));
  await until("the written file", async () => readFileSync(join(project, "summary.md"), "utf8").startsWith("# Summary"));

  step("allowing the bash approval from the chat's button");
  await until("the bash approval in the chat", () => chat.$$eval(".approval.open", (els) => els.some((el) => el.textContent.includes("bash echo tool-output-marker"))));
  assert.ok(await chat.$(".tool.waiting"), "the bash tool is not marked waiting");
  const buttons = await chat.$$(".approval.open button");
  const labels = await Promise.all(buttons.map((b) => b.evaluate((el) => el.textContent)));
  assert.deepEqual(labels, ["Allow once", "Allow for session", "Deny"]);
  await buttons[0].click();
  await until("the bash approval answered", () => chat.$$eval(".approval", (els) => els.some((el) => el.textContent.includes("allow_once (rein.vscode)") && el.textContent.includes("bash"))));
  assert.equal((await chat.$$(".approval.open")).length, 0, "an answered approval still offers buttons");
  await until("the tool's output", () => chat.$$eval(".tool.done", (els) => els.some((el) => el.textContent.includes("tool-output-marker") && el.textContent.includes("exit 0"))));
  await until("the run to end", () => chat.$$eval(".notice", (els) => els.some((el) => el.textContent.includes("run completed"))));
  await until("the final Markdown", () => chat.$$eval(".assistant em", (els) => els.some((el) => el.textContent === "edited line")));
  const statusLine = await chat.$eval("#status", (el) => el.textContent);
  assert.match(statusLine, /idle · local\/test-model · \d+ tokens · \$/);
  await page.screenshot({ path: join(shots, "vscode-chat.png") });

  step("picking a session started elsewhere attaches to it");
  const started = await other.createSession(project);
  await other.call("session/rename", { session_id: started.session_id, name: "started in a terminal" });
  await runCommand("rein: Pick a Session");
  await until("the session in the picker", async () =>
    (await page.$$eval(".quick-input-list .monaco-list-row", (rows) => rows.map((row) => row.textContent))).some((label) =>
      label.includes("started in a terminal"),
    ),
  );
  const input = await page.waitForSelector(".quick-input-widget .quick-input-box input", { visible: true });
  await input.type("started in a terminal");
  await page.keyboard.press("Enter");
  await until("the chat to follow the picked session", async () =>
    (await chat.$eval("#status", (el) => el.textContent)).startsWith(started.session_id.slice(0, 13)),
  );
  step("passed");
} catch (error) {
  failed = true;
  console.error(error);
  console.error("code-server output:\n" + serverLog.join("").slice(-4000));
  if (page) await page.screenshot({ path: join(scratch, "failure.png") }).catch(() => {});
  console.error(`failure screenshot (if any): ${join(scratch, "failure.png")}`);
} finally {
  other?.close();
  await browser?.close().catch(() => {});
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {
    // already gone
  }
  if (!failed) rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
