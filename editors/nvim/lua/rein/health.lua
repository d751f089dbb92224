-- :checkhealth rein: Neovim's version, the `rein` binary, and whether the daemon answers.

local M = {}

-- Neovim 0.10 has vim.health.start/ok/...; 0.7 to 0.9 have require("health").report_*.
local function reporter()
  local health = vim.health
  if health and health.start then
    return health.start, health.ok, health.warn, health.error
  end
  health = require("health")
  return health.report_start, health.report_ok, health.report_warn, health.report_error
end

function M.check()
  local start, ok, warn, fail = reporter()
  start("rein")
  if vim.fn.has("nvim-0.7") == 1 then
    ok("Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor))
  else
    fail("Neovim 0.7 or later is needed")
  end

  local cmd = require("rein").command()
  local exe = vim.fn.exepath(cmd[1])
  if exe == "" then
    fail(string.format("`%s` is not on PATH", cmd[1]), {
      "Install rein (see README.md) or give its path: require('rein').setup({ cmd = { '/path/to/rein', 'stdio' } })",
    })
    return
  end
  local version = vim.fn.system({ exe, "--version" })
  if vim.v.shell_error == 0 then
    ok(string.format("%s: %s", exe, (version:gsub("%s+$", ""))))
  else
    warn(string.format("%s --version failed: %s", exe, version))
  end

  -- `rein stdio` starts the daemon when none runs; initialize proves the round trip.
  local rpc = require("rein.rpc")
  local started, client = pcall(rpc.start, cmd)
  if not started then
    fail("cannot start " .. table.concat(cmd, " ") .. ": " .. tostring(client))
    return
  end
  local err, result = client:call_sync("initialize", {
    client_name = "rein.nvim.health",
    client_version = "0.1.0",
    protocol_version = "1.0",
  }, 15000)
  client:close()
  if err then
    fail("the daemon did not answer: " .. tostring(err.message), {
      "Run `rein doctor` in a terminal; check REIN_HOME and REIN_SOCKET.",
    })
  else
    local daemon = type(result) == "table" and result.daemon_version or nil
    ok("the daemon answers" .. (type(daemon) == "string" and (" (reind " .. daemon .. ")") or ""))
  end
end

return M
