-- rein for Neovim: prompt with the selection or buffer as context, attach to a session, steer,
-- cancel, pick a session; a chat buffer that streams the run (thinking folded); approvals in
-- a floating window that does not block (with a diff tab for edits) and closes when anyone
-- answers; buffers the agent wrote or edited are reloaded (:checktime).
--
-- It talks to the daemon through `rein stdio` (see docs/editors.md). Neovim 0.7 or later.

local approval = require("rein.approval")
local chat = require("rein.chat")
local rpc = require("rein.rpc")

local M = {}

local config = { cmd = { "rein", "stdio" } }

-- The connection and the attached session.
local state = { client = nil, session_id = nil, subscription = nil, running = false, cwd = nil }

--- Options: `cmd`, the command that bridges to the daemon (default { "rein", "stdio" }).
function M.setup(opts)
  config = vim.tbl_extend("force", config, opts or {})
end

--- The configured bridge command (for :checkhealth).
function M.command()
  return config.cmd
end

local function fail(what, err)
  vim.notify(string.format("rein: %s: %s", what, err.message or vim.inspect(err)), vim.log.levels.ERROR)
end

--- The connection, started on first use; nil (after telling the user why) when the bridge
--- command cannot run.
local function client()
  if state.client then
    return state.client
  end
  if vim.fn.executable(config.cmd[1]) ~= 1 then
    vim.notify(
      string.format(
        "rein: `%s` was not found on PATH. Install rein, or point setup({ cmd = { \"/path/to/rein\", \"stdio\" } }) at it. :checkhealth rein tells more.",
        config.cmd[1]
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  local started, c = pcall(rpc.start, config.cmd, function()
    state.client, state.session_id, state.subscription = nil, nil, nil
    vim.schedule(approval.clear)
  end)
  if not started then
    vim.notify("rein: " .. tostring(c), vim.log.levels.ERROR)
    return nil
  end
  local err = c:call_sync("initialize", {
    client_name = "rein.nvim",
    client_version = "0.1.0",
    protocol_version = "1.0",
    capabilities = { approvals = true },
  })
  if err then
    c:close()
    vim.notify("rein: initialize failed: " .. (err.message or "?"), vim.log.levels.ERROR)
    return nil
  end
  state.client = c
  return c
end

approval.on_respond(function(session_id, request_id, decision)
  local c = client()
  if not c then
    return
  end
  c:call("approval/respond", {
    session_id = session_id,
    request_id = request_id,
    decision = decision,
  }, function(err)
    if err and err.kind == "approval_not_found" then
      -- Another client answered first; its approval_resolved closes the float.
      vim.notify("rein: another client answered that approval")
      approval.resolved(request_id)
    elseif err then
      fail("approval", err)
    end
  end)
end)

local file_tools = { write = true, edit = true }

local function on_item(session_id, item)
  if item.type ~= "event" then
    if item.type == "lagged" or item.type == "resync_required" then
      M.attach(session_id)
    end
    return
  end
  local event = item.event
  chat.event(event)
  if event.kind == "agent_start" then
    state.running = true
  elseif event.kind == "settled" then
    state.running = false
  elseif event.kind == "approval_requested" then
    approval.add(session_id, event, state.cwd)
  elseif event.kind == "approval_resolved" then
    approval.resolved(event.request_id)
  elseif event.kind == "tool_execution_end" and file_tools[event.tool_name] then
    vim.cmd("checktime")
  end
end

local function follow(session_id, after_seq)
  local c = client()
  if not c then
    return false
  end
  approval.clear()
  if state.subscription then
    c:unsubscribe(state.subscription)
    state.subscription = nil
  end
  state.session_id = session_id
  local err, id = nil, nil
  local done = false
  c:subscribe(session_id, after_seq, function(item)
    on_item(session_id, item)
  end, function(e, sub)
    err, id, done = e, sub, true
  end)
  vim.wait(10000, function()
    return done
  end, 10)
  if err then
    fail("subscribe", err)
    return false
  end
  state.subscription = id
  return true
end

--- Attaches to a session: shows its history in the chat, then streams its events.
function M.attach(session_id)
  local c = client()
  if not c then
    return
  end
  local err, opened = c:call_sync("session/open", { session_id = session_id })
  if err then
    return fail("attach", err)
  end
  local history
  -- Only the recent history is shown; the daemon sends it newest page first.
  err, history = c:call_sync("session/messages", { session_id = session_id, limit = 200 })
  if err then
    return fail("attach", err)
  end
  chat.clear()
  chat.lines({ "# rein session " .. session_id, "" })
  chat.history(history.messages)
  state.running = opened.running
  state.cwd = opened.cwd
  follow(session_id, history.last_seq)
  chat.open()
end

local function ensure_session()
  if state.session_id then
    return state.session_id
  end
  local c = client()
  if not c then
    return nil
  end
  local err, created = c:call_sync("session/create", { cwd = vim.fn.getcwd() })
  if err then
    fail("create session", err)
    return nil
  end
  chat.clear()
  chat.lines({ "# rein session " .. created.session_id, "" })
  state.cwd = created.cwd
  follow(created.session_id, created.last_seq)
  chat.open()
  return created.session_id
end

--- The lines `line1`..`line2` of the current buffer (or all of it) as prompt context.
local function context(line1, line2)
  local name = vim.fn.expand("%:.")
  if name == "" or vim.bo.buftype ~= "" then
    return ""
  end
  local lines = vim.api.nvim_buf_get_lines(0, line1 - 1, line2, false)
  local where = string.format("%s (lines %d-%d)", name, line1, line2)
  return string.format("\n\nContext from %s:\n```%s\n%s\n```", where, vim.bo.filetype, table.concat(lines, "\n"))
end

--- Sends a prompt to the attached session (a new one for the working directory when none is
--- attached). `opts.range` ({ line1, line2 }) names the lines sent as context; without it the
--- whole buffer goes. A busy session queues the prompt as a follow-up.
function M.prompt(text, opts)
  opts = opts or {}
  local range = opts.range or { 1, vim.api.nvim_buf_line_count(0) }
  local full = text .. context(range[1], range[2])
  local session_id = ensure_session()
  if not session_id then
    return
  end
  client():call("session/prompt", { session_id = session_id, text = full, when_busy = "follow_up" }, function(err)
    if err then
      fail("prompt", err)
    end
  end)
end

--- Steers the running run.
function M.steer(text)
  if not state.session_id then
    return vim.notify("rein: no session attached", vim.log.levels.WARN)
  end
  client():call("session/steer", { session_id = state.session_id, text = text }, function(err)
    if err then
      fail("steer", err)
    end
  end)
end

--- Cancels the running run.
function M.cancel()
  if not state.session_id then
    return vim.notify("rein: no session attached", vim.log.levels.WARN)
  end
  client():call("session/cancel", { session_id = state.session_id }, function(err, result)
    if err then
      fail("cancel", err)
    elseif not result.cancelled then
      vim.notify("rein: nothing is running")
    end
  end)
end

--- Lists the working directory's sessions and attaches to the one picked.
function M.pick()
  local c = client()
  if not c then
    return
  end
  local err, listed = c:call_sync("session/list", { cwd = vim.fn.getcwd() })
  if err then
    return fail("list sessions", err)
  end
  vim.ui.select(listed.sessions, {
    prompt = "rein session",
    format_item = function(s)
      local title = (type(s.name) == "string" and s.name) or (type(s.first_prompt) == "string" and s.first_prompt) or s.session_id
      return string.format("%s  %s%s", title, s.updated, s.running and "  (running)" or "")
    end,
  }, function(choice)
    if choice then
      M.attach(choice.session_id)
    end
  end)
end

--- Answers the oldest open approval: `decision` is allow_once, allow_session or deny.
function M.approve(decision)
  approval.answer(decision)
end

--- The attached session's id, and whether it runs.
function M.status()
  return { session_id = state.session_id, running = state.running }
end

--- Disconnects.
function M.stop()
  if state.client then
    state.client:close()
  end
  approval.clear()
  state.client, state.session_id, state.subscription = nil, nil, nil
end

return M
