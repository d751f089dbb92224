// The VS Code extension's protocol client against a live daemon and the fake provider.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { bin, startFixture } from "../../testkit/fixture.mjs";
import { ReinClient, RpcError } from "../out/protocol.js";
import { AttachedSession } from "../out/session.js";

let fixture;

before(async () => {
  fixture = await startFixture({
    files: { "notes.txt": "first\n" },
    script: [
      { text: "Hello from the fake model." },
      { tool_calls: [{ name: "write", arguments: { path: "notes.txt", content: "rewritten\n" } }] },
      { text: "Rewrote notes.txt." },
      { tool_calls: [{ name: "bash", arguments: { command: "sleep 30" } }] },
    ],
  });
});

after(async () => {
  await fixture?.stop();
});

/** Hooks that record what the session reports. */
function recorder() {
  const seen = { changes: 0, approvals: [], files: [] };
  const hooks = {
    onChange: () => seen.changes++,
    onApproval: (_session, request) => seen.approvals.push(request),
    onFileChanged: (_session, path) => seen.files.push(path),
  };
  return { seen, hooks };
}

/** Resolves once `predicate()` holds, checking after every change. */
function until(predicate, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 20000);
    const check = () => {
      if (predicate()) {
        clearTimeout(timer);
        resolve();
      } else setTimeout(check, 20);
    };
    check();
  });
}

test("errors carry the daemon's kind", async () => {
  const client = await ReinClient.connectSocket(fixture.socket);
  await client.initialize("rein.vscode.test", false);
  await assert.rejects(client.openSession("no-such-session"), (error) => {
    assert.ok(error instanceof RpcError);
    assert.equal(error.kind, "session_not_found");
    return true;
  });
  client.close();
});

test("a prompt streams into the transcript, approvals round-trip, and a second client sees it all", async () => {
  const client = await ReinClient.connectSocket(fixture.socket);
  await client.initialize("rein.vscode.test", true);
  const mine = recorder();
  const session = await AttachedSession.create(client, fixture.project, mine.hooks);

  // The second client goes through `rein stdio`, as the extension itself does.
  const watcher = ReinClient.spawnStdio(bin("rein"), fixture.env);
  await watcher.initialize("watcher", false);
  const theirs = recorder();
  const watched = await AttachedSession.attach(watcher, session.sessionId, theirs.hooks);

  await session.prompt("Say hello.");
  await until(() => session.transcript.toText().includes("-- run completed"), "the first run");
  await session.waitUntilSettled();
  assert.match(session.transcript.toText(), /^> Say hello\.\nHello from the fake model\./);

  await session.prompt("Rewrite notes.txt.");
  await until(() => mine.seen.approvals.length === 1, "the approval request");
  const [request] = mine.seen.approvals;
  assert.equal(request.tool_name, "write");
  assert.equal(await session.respond(request.request_id, "allow_once"), true);
  // The first answer wins; a second one is told it came too late.
  assert.equal(await watched.respond(request.request_id, "deny"), false);
  await until(() => (session.transcript.toText().match(/-- run completed/g) ?? []).length === 2, "the second run");
  assert.equal(readFileSync(join(fixture.project, "notes.txt"), "utf8"), "rewritten\n");
  assert.deepEqual(mine.seen.files, ["notes.txt"]);
  assert.match(session.transcript.toText(), /\[done\] write notes\.txt/);
  assert.match(session.transcript.toText(), /allow_once \(rein\.vscode\.test\)/);

  await until(() => watched.transcript.toText() === session.transcript.toText(), "the watcher to catch up");
  assert.equal(theirs.seen.approvals.length, 1);
  assert.deepEqual(theirs.seen.files, ["notes.txt"]);

  // A run stuck on an approval is cancelled from the watcher.
  await session.prompt("Sleep.");
  await until(() => mine.seen.approvals.length === 2, "the second approval request");
  assert.equal(await watched.cancel(), true);
  await until(() => session.transcript.toText().includes("-- run cancelled"), "the cancelled run");
  await session.waitUntilSettled();

  const listed = await client.listSessions(fixture.project);
  assert.ok(listed.some((s) => s.session_id === session.sessionId));

  await watched.detach();
  watcher.close();
  await session.detach();
  client.close();
});
