// The protocol client's line framing and dispatch, against a scripted Unix-socket peer.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ReinClient, RpcError } from "../out/protocol.js";

/** Serves one connection; `answer(request, write)` replies to each request line. */
async function peer(answer) {
  const dir = mkdtempSync(join(tmpdir(), "rein-framing-"));
  const socket = join(dir, "peer.sock");
  const server = createServer((connection) => {
    let buffered = "";
    connection.setEncoding("utf8");
    connection.on("data", (chunk) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        answer(JSON.parse(line), (text) => connection.write(text));
      }
    });
  });
  await new Promise((resolve) => server.listen(socket, resolve));
  return {
    socket,
    close: () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("answers split across writes, out of order, with notifications between them", async () => {
  const requests = [];
  const server = await peer((request, write) => {
    requests.push(request);
    if (request.method === "session/subscribe") {
      write(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: "sub-1" }) + "\n");
      return;
    }
    if (requests.length < 3) return; // hold the first two answers, then send both reversed
    const event = {
      jsonrpc: "2.0",
      method: "session/event",
      params: { subscription: "sub-1", result: { type: "event", session_id: "s", seq: 7, event: { kind: "settled" } } },
    };
    const second = JSON.stringify({ jsonrpc: "2.0", id: requests[2].id, result: { n: 2 } });
    const first = JSON.stringify({
      jsonrpc: "2.0",
      id: requests[1].id,
      error: { code: -32001, message: "no session s", data: { kind: "session_not_found" } },
    });
    const all = `${second}\n${JSON.stringify(event)}\r\n\n${first}\n`;
    write(all.slice(0, 10));
    setTimeout(() => write(all.slice(10)), 5);
  });
  const client = await ReinClient.connectSocket(server.socket);
  const items = [];
  await client.subscribe("s", 0, (item) => items.push(item));
  const failing = client.call("session/state", { session_id: "s" });
  const working = client.call("session/queue", { session_id: "s" });
  assert.deepEqual(await working, { n: 2 });
  await assert.rejects(failing, (error) => error instanceof RpcError && error.kind === "session_not_found" && error.code === -32001);
  assert.deepEqual(items, [{ type: "event", session_id: "s", seq: 7, event: { kind: "settled" } }]);
  assert.deepEqual(requests[0].params, { session_id: "s", after_seq: 0 });
  client.close();
  server.close();
});

test("calls pending when the connection drops are rejected", async () => {
  let arrived;
  const reached = new Promise((resolve) => (arrived = resolve));
  const server = await peer(() => arrived());
  const client = await ReinClient.connectSocket(server.socket);
  const closed = new Promise((resolve) => client.once("close", resolve));
  const pending = client.call("daemon/info");
  await reached;
  client.close();
  await assert.rejects(pending);
  await closed;
  await assert.rejects(client.call("daemon/info"), /closed/);
  server.close();
});

test("an error line with a null id answers the calls waiting (a refused connection)", async () => {
  const server = await peer((_request, write) => {
    const refused = {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "connections from another user are refused", data: { kind: "invalid_request" } },
    };
    write(JSON.stringify(refused) + "\n");
  });
  const client = await ReinClient.connectSocket(server.socket);
  await assert.rejects(
    client.call("daemon/info"),
    (error) => error instanceof RpcError && error.kind === "invalid_request" && /another user/.test(error.message),
  );
  client.close();
  server.close();
});
