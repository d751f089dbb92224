// Preloaded with `node --require` by the end-to-end tests: the reference servers listen on
// every interface, and tests must only ever listen on 127.0.0.1. Any `listen(port, ...)`
// without a host gets 127.0.0.1.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const numeric = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (numeric && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
