-- Headless end-to-end test of the Neovim plugin against a live daemon and the fake provider.
-- Run through editors/testkit/with-daemon.mjs (see editors/test.sh), which sets REIN_BIN,
-- REIN_SOCKET and REIN_TEST_PROJECT:
--
--   nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/nvim" -c "luafile editors/nvim/test/e2e.lua"
--
-- Exits 0 when every check passes, 1 otherwise.

local failures = 0
local passed = 0

local function check(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    io.stdout:write("ok - " .. name .. "\n")
  else
    failures = failures + 1
    io.stdout:write("not ok - " .. name .. ": " .. tostring(err) .. "\n")
  end
end

local function wait_for(what, predicate)
  if not vim.wait(20000, predicate, 20) then
    error("timed out waiting for " .. what)
  end
end

local function eq(want, got, what)
  if want ~= got then
    error(string.format("%s: want %s, got %s", what, vim.inspect(want), vim.inspect(got)))
  end
end

-- Everything runs inside one protected call, so a failure outside a check still ends Neovim
-- with a non-zero status instead of leaving it waiting.
local function main()
  local project = assert(os.getenv("REIN_TEST_PROJECT"), "REIN_TEST_PROJECT is not set")
  vim.cmd("cd " .. vim.fn.fnameescape(project))
  vim.cmd("runtime plugin/rein.lua")
  local rein = require("rein")
  local chat = require("rein.chat")
  rein.setup({ cmd = { os.getenv("REIN_BIN") or "rein", "stdio" } })

  local approval = require("rein.approval")

  check("a missing rein binary gives a clear message, not a stack trace", function()
    local notified = {}
    local notify = vim.notify
    vim.notify = function(message, level)
      table.insert(notified, { message = message, level = level })
    end
    rein.setup({ cmd = { "rein-not-installed-here", "stdio" } })
    local ok, err = pcall(vim.cmd, "ReinPrompt hello")
    vim.notify = notify
    rein.setup({ cmd = { os.getenv("REIN_BIN") or "rein", "stdio" } })
    assert(ok, "the command raised: " .. tostring(err))
    eq(1, #notified, "messages")
    assert(notified[1].message:find("`rein-not-installed-here` was not found on PATH", 1, true), notified[1].message)
    eq(vim.log.levels.ERROR, notified[1].level, "level")
  end)

  check(":checkhealth rein finds the binary and the daemon", function()
    local tabs = #vim.api.nvim_list_tabpages()
    vim.cmd("checkhealth rein")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    if #vim.api.nvim_list_tabpages() > tabs then
      vim.cmd("tabclose!")
    else
      vim.cmd("bwipe!")
    end
    assert(report:find("OK", 1, true), report)
    assert(report:find("the daemon answers (reind ", 1, true), report)
    assert(not report:find("ERROR", 1, true), report)
  end)

  local function diff_windows()
    local wins = {}
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if vim.api.nvim_win_get_option(win, "diff") then
        table.insert(wins, win)
      end
    end
    return wins
  end

  check("a prompt streams folded thinking, its edit approval floats with a diff, and the buffer reloads", function()
    vim.cmd("silent edit notes.txt")
    local notes_tab = vim.api.nvim_get_current_tabpage()
    eq("first line", vim.api.nvim_buf_get_lines(0, 0, 1, false)[1], "buffer before")
    vim.cmd("1,1ReinPrompt Rewrite the first line.")
    wait_for("the approval float", function()
      return approval.window() ~= nil
    end)
    local float = approval.window()
    local shown = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false), "\n")
    assert(shown:find("rein wants to run edit notes.txt", 1, true), shown)
    -- The float did not take the focus: the editor is not blocked.
    assert(vim.api.nvim_get_current_win() ~= float, "the float took the focus")
    local wins = diff_windows()
    eq(2, #wins, "diff windows in the approval's tab")
    local current = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[1]), 0, -1, false)
    local proposed = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[2]), 0, -1, false)
    eq("first line", current[1], "current side")
    eq("edited line", proposed[1], "proposed side")
    eq("second line", proposed[2], "proposed side, line 2")
    local diff_tab = vim.api.nvim_get_current_tabpage()
    -- Answer with the float's own key.
    vim.api.nvim_win_call(float, function()
      vim.cmd("normal a")
    end)
    wait_for("the run to end", function()
      return chat.text():find("-- run completed --", 1, true) ~= nil
    end)
    wait_for("the float to close", function()
      return approval.window() == nil
    end)
    assert(not vim.api.nvim_tabpage_is_valid(diff_tab), "the diff tab stayed open")
    vim.api.nvim_set_current_tabpage(notes_tab)
    local text = chat.text()
    assert(text:find("## You\nRewrite the first line.\n\nContext from notes.txt (lines 1-1):", 1, true), text)
    assert(text:find("Edited notes.txt.", 1, true), text)
    assert(text:find("- tool: edit notes.txt", 1, true), text)
    assert(text:find("allow_once by rein.nvim", 1, true), text)
    local lines = vim.api.nvim_buf_get_lines(chat.buffer(), 0, -1, false)
    local thinking
    for index, line in ipairs(lines) do
      if line == chat.THINKING .. "The first line needs new text." then
        thinking = index
      end
    end
    assert(thinking, "no thinking line in\n" .. text)
    eq(chat.THINKING .. "An edit does it.", lines[thinking + 1], "second thinking line")
    local chat_win = vim.fn.bufwinid(chat.buffer())
    assert(chat_win ~= -1, "the chat is not shown")
    eq(thinking, vim.api.nvim_win_call(chat_win, function()
      return vim.fn.foldclosed(thinking + 1)
    end), "the thinking fold is closed")
    wait_for("the buffer to reload", function()
      return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == "edited line"
    end)
    wait_for("the session to settle", function()
      return not rein.status().running
    end)
  end)

  check("cancel ends a run that waits for an approval, and its float closes", function()
    rein.prompt("Sleep a while.")
    wait_for("the bash approval float", function()
      return approval.window() ~= nil
    end)
    eq(0, #diff_windows(), "diff windows for a bash approval")
    vim.cmd("ReinCancel")
    wait_for("the cancelled run", function()
      return chat.text():find("-- run cancelled --", 1, true) ~= nil
    end)
    wait_for("the float to close", function()
      return approval.window() == nil
    end)
  end)

  check("a steer reaches the session and its answer streams in", function()
    wait_for("the session to settle", function()
      return not rein.status().running
    end)
    rein.prompt("Say hi.")
    vim.cmd("ReinSteer Also say bye.")
    wait_for("the steered answer", function()
      return chat.text():find("Bye.", 1, true) ~= nil
    end)
    local text = chat.text()
    assert(text:find("## You\nAlso say bye.", 1, true), text)
    assert(text:find("Hi.", 1, true), text)
  end)

  check("an approval answered by another client closes the float", function()
    wait_for("the session to settle", function()
      return not rein.status().running
    end)
    local rpc = require("rein.rpc")
    local other = rpc.start({ os.getenv("REIN_BIN") or "rein", "stdio" })
    local err = other:call_sync("initialize", {
      client_name = "nvim-other",
      client_version = "0",
      protocol_version = "1.0",
    })
    assert(not err, vim.inspect(err))
    rein.prompt("Run something.")
    wait_for("the approval float", function()
      return approval.window() ~= nil
    end)
    local waiting = approval.pending()[1]
    eq("bash", waiting.event.tool_name, "tool waiting")
    err = other:call_sync("approval/respond", {
      session_id = rein.status().session_id,
      request_id = waiting.event.request_id,
      decision = "allow_once",
    })
    assert(not err, vim.inspect(err))
    wait_for("the float to close", function()
      return approval.window() == nil
    end)
    eq(0, #approval.pending(), "approvals still open")
    wait_for("the run to end", function()
      return chat.text():find("The other client allowed it.", 1, true) ~= nil
    end)
    assert(chat.text():find("allow_once by nvim-other", 1, true), chat.text())
    other:close()
  end)

  check("picking a session attaches and shows its history", function()
    wait_for("the session to settle", function()
      return not rein.status().running
    end)
    local session_id = rein.status().session_id
    rein.stop()
    chat.clear()
    vim.ui.select = function(items, _, on_choice)
      on_choice(items[1], 1)
    end
    vim.cmd("ReinSessions")
    wait_for("the history", function()
      return chat.text():find("Edited notes.txt.", 1, true) ~= nil
    end)
    eq(session_id, rein.status().session_id, "attached session")
    assert(chat.text():find("## You\nSleep a while.", 1, true), chat.text())
  end)
  rein.stop()
end

local ok, err = pcall(main)
if not ok then
  failures = failures + 1
  io.stdout:write("not ok - setup: " .. tostring(err) .. "\n")
end
io.stdout:write(string.format("%d passed, %d failed\n", passed, failures))
vim.cmd(failures == 0 and "qall!" or "cquit 1")
