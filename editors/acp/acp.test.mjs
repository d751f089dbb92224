// `rein acp` driven by the official ACP TypeScript SDK's client side, against a live daemon
// and the fake provider. A plain protocol client follows the same session over the socket
// and must see the same run.

import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, test } from "node:test";
import { bin, startFixture } from "../testkit/fixture.mjs";
import { ReinClient } from "../vscode/out/protocol.js";

let fixture;

before(async () => {
  fixture = await startFixture({
    script: [
      {
        thinking: "A new file is needed.",
        text: "Writing it.",
        tool_calls: [{ name: "write", arguments: { path: "hello.txt", content: "hi\n" } }],
      },
      { text: "Created hello.txt." },
      { tool_calls: [{ name: "bash", arguments: { command: "sleep 30" } }] },
      { text: "Not sleeping then." },
      { tool_calls: [{ name: "bash", arguments: { command: "sleep 30" } }] },
      { text: "Hi terminal." },
    ],
  });
});

after(async () => {
  await fixture?.stop();
});

/**
 * Spawns `rein acp` and runs `op(ctx, editor)` on an SDK client connection to it. `editor`
 * records the updates and answers permission requests with `editor.onPermission`.
 */
async function withAgent(op) {
  const child = spawn(bin("rein"), ["acp"], {
    env: fixture.env,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const editor = { updates: [], permissions: [], onPermission: null };
  const app = client({ name: "rein-acp-test" })
    .onNotification(methods.client.session.update, ({ params }) => {
      editor.updates.push(params);
    })
    .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
      editor.permissions.push(params);
      return editor.onPermission(params, signal);
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    return await app.connectWith(stream, (ctx) => op(ctx, editor));
  } finally {
    child.stdin.end();
    child.kill("SIGTERM");
    await exited;
  }
}

async function initialize(ctx) {
  return ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "rein-acp-test", version: "0.0.0" },
  });
}

/** Resolves once `predicate()` holds. */
async function until(predicate, what) {
  const deadline = Date.now() + 20000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const kinds = (updates) => updates.map((u) => u.update.sessionUpdate);
const text = (updates, kind) =>
  updates
    .filter((u) => u.update.sessionUpdate === kind)
    .map((u) => u.update.content.text)
    .join("");

test("initialize, new session, a permission round trip, cancel, modes and load", async () => {
  let sessionId;
  let writeCallId;
  const watched = [];
  const pendingApprovals = [];
  const watcher = await ReinClient.connectSocket(fixture.socket);
  await watcher.initialize("watcher", false);

  await withAgent(async (ctx, editor) => {
    const init = await initialize(ctx);
    assert.equal(init.protocolVersion, PROTOCOL_VERSION);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentInfo.name, "rein");

    const created = await ctx.request(methods.agent.session.new, {
      cwd: fixture.project,
      mcpServers: [],
    });
    sessionId = created.sessionId;
    assert.equal(created.modes.currentModeId, "ask");
    assert.deepEqual(
      created.modes.availableModes.map((m) => m.id),
      ["ask", "auto-edit", "yolo"],
    );
    const model = created.configOptions.find((o) => o.id === "model");
    assert.equal(model.currentValue, "local/test-model");

    // The second client: a plain protocol client on the socket, following the same session.
    await watcher.subscribe(sessionId, 0, (item) => {
      if (item.type !== "event") return;
      watched.push(item.event);
      if (item.event.kind === "approval_requested") pendingApprovals.push(item.event);
    });

    // A tool-using prompt; the permission request is answered here.
    editor.onPermission = (params) => {
      assert.equal(params.sessionId, sessionId);
      assert.equal(params.toolCall.kind, "edit");
      assert.equal(params.toolCall.title, "write hello.txt");
      const allow = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    };
    const first = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Create hello.txt." }],
    });
    assert.equal(first.stopReason, "end_turn");
    assert.equal(editor.permissions.length, 1);
    assert.equal(readFileSync(join(fixture.project, "hello.txt"), "utf8"), "hi\n");

    const mine = editor.updates.filter((u) => u.sessionId === sessionId);
    assert.equal(text(mine, "agent_thought_chunk"), "A new file is needed.");
    assert.equal(text(mine, "agent_message_chunk"), "Writing it.Created hello.txt.");
    const call = mine.find((u) => u.update.sessionUpdate === "tool_call").update;
    writeCallId = call.toolCallId;
    assert.equal(call.kind, "edit");
    assert.equal(call.status, "pending");
    assert.deepEqual(call.locations, [{ path: "hello.txt" }]);
    assert.equal(call.content[0].type, "diff");
    const statuses = mine
      .filter((u) => u.update.sessionUpdate === "tool_call_update" && u.update.toolCallId === writeCallId)
      .map((u) => u.update.status);
    assert.deepEqual(statuses, ["in_progress", "completed"]);
    const usage = mine.find((u) => u.update.sessionUpdate === "usage_update").update;
    assert.ok(usage.used > 0 && usage.size >= usage.used, JSON.stringify(usage));
    assert.equal(usage.cost.currency, "USD");

    // Another client answers first: the editor's permission request is withdrawn with
    // $/cancel_request, and the run goes on with the other client's denial.
    let withdrawn = false;
    editor.onPermission = async (params, signal) => {
      await until(() => pendingApprovals.length === 2, "the watcher to see the approval");
      const approval = pendingApprovals[1];
      assert.equal(approval.tool_call_id, params.toolCall.toolCallId);
      await watcher.respondApproval(sessionId, approval.request_id, "deny", "not now");
      if (!signal.aborted) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      }
      withdrawn = true;
      return { outcome: { outcome: "cancelled" } };
    };
    const denied = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Sleep a while." }],
    });
    assert.equal(denied.stopReason, "end_turn");
    await until(() => withdrawn, "the permission request to be withdrawn");
    assert.equal(editor.permissions.length, 2);

    // Cancel while the next run waits for its approval.
    let cancelled;
    editor.onPermission = async () => {
      await ctx.notify(methods.agent.session.cancel, { sessionId });
      await cancelled;
      return { outcome: { outcome: "cancelled" } };
    };
    cancelled = ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Sleep again." }],
    });
    assert.equal((await cancelled).stopReason, "cancelled");
    // The call the cancel interrupted does not stay pending in the editor.
    const calls = editor.updates.filter((u) => u.update.sessionUpdate === "tool_call");
    const sleepId = calls[calls.length - 1].update.toolCallId;
    const sleepStatuses = editor.updates
      .filter((u) => u.update.toolCallId === sleepId && u.update.status)
      .map((u) => u.update.status);
    assert.equal(sleepStatuses[sleepStatuses.length - 1], "failed", sleepStatuses.join(","));

    // A prompt from another client shows up in the editor; the editor's own prompts do not
    // come back to it.
    const before = editor.updates.length;
    await watcher.prompt(sessionId, "From the terminal.");
    await until(
      () => text(editor.updates.slice(before), "agent_message_chunk") === "Hi terminal.",
      "the terminal's run",
    );
    assert.equal(text(editor.updates.slice(before), "user_message_chunk"), "From the terminal.");
    assert.equal(text(editor.updates, "user_message_chunk"), "From the terminal.");

    // Modes are approval policies.
    await ctx.request(methods.agent.session.setMode, { sessionId, modeId: "auto-edit" });
    const state = await watcher.call("session/state", { session_id: sessionId });
    assert.equal(state.approval_policy, "auto-edit");
    await assert.rejects(ctx.request(methods.agent.session.setMode, { sessionId, modeId: "nope" }));

    // Config options pick the thinking level and the model.
    const configured = await ctx.request(methods.agent.session.setConfigOption, {
      sessionId,
      configId: "thought_level",
      value: "high",
    });
    const level = configured.configOptions.find((o) => o.id === "thought_level");
    assert.equal(level.currentValue, "high");
    const after = await watcher.call("session/state", { session_id: sessionId });
    assert.equal(after.thinking_level, "high");
    // A change from another client reaches the editor as a config_option_update.
    await watcher.call("session/set_thinking", { session_id: sessionId, level: "low" });
    const levelNow = () =>
      editor.updates
        .filter((u) => u.update.sessionUpdate === "config_option_update")
        .map((u) => u.update.configOptions.find((o) => o.id === "thought_level").currentValue)
        .pop();
    await until(() => levelNow() === "low", "the thinking level update");
    await assert.rejects(
      ctx.request(methods.agent.session.setConfigOption, {
        sessionId,
        configId: "model",
        value: "nowhere/none",
      }),
    );

    const listed = await ctx.request(methods.agent.session.list, { cwd: fixture.project });
    assert.ok(listed.sessions.some((s) => s.sessionId === sessionId));
  });

  // The plain client saw the same runs: the approval answered by the adapter, the write, the
  // text, and both ends.
  const ends = watched.filter((e) => e.kind === "agent_end").map((e) => e.reason);
  assert.deepEqual(ends, ["completed", "completed", "cancelled", "completed"]);
  const resolved = watched.filter((e) => e.kind === "approval_resolved");
  assert.deepEqual(
    resolved.slice(0, 2).map((e) => [e.decision, e.resolved_by]),
    [
      ["allow_once", "rein-acp"],
      ["deny", "watcher"],
    ],
  );
  assert.ok(watched.some((e) => e.kind === "tool_execution_end" && e.tool_call_id === writeCallId));
  const streamed = watched
    .filter((e) => e.kind === "message_update" && e.delta.type === "text_delta")
    .map((e) => e.delta.delta)
    .join("");
  assert.equal(streamed, "Writing it.Created hello.txt.Not sleeping then.Hi terminal.");
  watcher.close();

  // A new editor connection loads the session and gets its history replayed.
  await withAgent(async (ctx, editor) => {
    await initialize(ctx);
    const loaded = await ctx.request(methods.agent.session.load, {
      sessionId,
      cwd: fixture.project,
      mcpServers: [],
    });
    assert.equal(loaded.modes.currentModeId, "auto-edit");
    const replayed = editor.updates.filter((u) => u.sessionId === sessionId);
    assert.equal(
      text(replayed, "user_message_chunk"),
      "Create hello.txt.Sleep a while.Sleep again.From the terminal.",
    );
    assert.match(text(replayed, "agent_message_chunk"), /^Writing it\.Created hello\.txt\./);
    const order = kinds(replayed);
    assert.ok(order.indexOf("tool_call") < order.lastIndexOf("tool_call_update"));
    const result = replayed.find(
      (u) => u.update.sessionUpdate === "tool_call_update" && u.update.toolCallId === writeCallId,
    );
    assert.equal(result.update.status, "completed");
  });
});

test("slash commands are announced and run as daemon calls", async () => {
  const watcher = await ReinClient.connectSocket(fixture.socket);
  await watcher.initialize("watcher", false);
  let sessionId;
  await withAgent(async (ctx, editor) => {
    await initialize(ctx);
    const created = await ctx.request(methods.agent.session.new, { cwd: fixture.project, mcpServers: [] });
    sessionId = created.sessionId;
    await until(
      () => editor.updates.some((u) => u.update.sessionUpdate === "available_commands_update"),
      "available_commands_update",
    );
    const announced = editor.updates.find((u) => u.update.sessionUpdate === "available_commands_update");
    assert.equal(announced.sessionId, sessionId);
    assert.deepEqual(
      announced.update.availableCommands.map((c) => c.name),
      ["compact", "undo", "rename", "model", "thinking"],
    );
    assert.equal(announced.update.availableCommands.find((c) => c.name === "rename").input.hint, "new name");

    const renamed = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "/rename slash named" }],
    });
    assert.equal(renamed.stopReason, "end_turn");
    assert.equal(text(editor.updates, "agent_message_chunk"), 'Renamed the session to "slash named".');
    const thinking = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "/thinking high" }],
    });
    assert.equal(thinking.stopReason, "end_turn");
    await assert.rejects(
      ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "/thinking loud" }] }),
      /usage: \/thinking/,
    );
  });
  const state = await watcher.call("session/state", { session_id: sessionId });
  assert.equal(state.name, "slash named");
  assert.equal(state.thinking_level, "high");
  // No prompt reached the model: the commands were daemon calls.
  const history = await watcher.call("session/messages", { session_id: sessionId });
  assert.equal(history.messages.length, 0);

  // Loading the session announces the commands too.
  await withAgent(async (ctx, editor) => {
    await initialize(ctx);
    await ctx.request(methods.agent.session.load, { sessionId, cwd: fixture.project, mcpServers: [] });
    await until(
      () => editor.updates.some((u) => u.update.sessionUpdate === "available_commands_update"),
      "available_commands_update after load",
    );
  });
  watcher.close();
});
