-- A client of the rein daemon protocol (docs/protocol.md) over a `rein stdio` job: JSON-RPC
-- 2.0, one JSON message per line. Works on Neovim 0.7 (vim.fn.jobstart, vim.json).

local M = {}

local Client = {}
Client.__index = Client

--- Starts `cmd` (a list, e.g. { "rein", "stdio" }) and returns a client talking through it.
--- `on_exit(code)` is called when the job ends.
function M.start(cmd, on_exit)
  local self = setmetatable({ next_id = 1, pending = {}, subscriptions = {}, partial = "" }, Client)
  self.job = vim.fn.jobstart(cmd, {
    on_stdout = function(_, data)
      self:_receive(data)
    end,
    on_stderr = function(_, data)
      local text = table.concat(data, "\n")
      if text:match("%S") then
        vim.schedule(function()
          vim.notify("rein: " .. text, vim.log.levels.WARN)
        end)
      end
    end,
    on_exit = function(_, code)
      self.job = nil
      for id, callback in pairs(self.pending) do
        self.pending[id] = nil
        callback({ code = -1, message = "rein stdio exited" }, nil)
      end
      if on_exit then
        on_exit(code)
      end
    end,
  })
  if self.job <= 0 then
    error("cannot start " .. table.concat(cmd, " "))
  end
  return self
end

-- Job output arrives in pieces: the first item continues the last partial line and the last
-- item is the start of the next one.
function Client:_receive(data)
  data[1] = self.partial .. data[1]
  self.partial = table.remove(data)
  for _, line in ipairs(data) do
    if line:match("%S") then
      self:_dispatch(line)
    end
  end
end

function Client:_dispatch(line)
  local ok, message = pcall(vim.json.decode, line)
  if not ok or type(message) ~= "table" then
    return
  end
  if message.method then
    local params = message.params or {}
    local handler = self.subscriptions[params.subscription]
    if handler then
      handler(params.result)
    end
    return
  end
  local callback = self.pending[message.id]
  if not callback then
    return
  end
  self.pending[message.id] = nil
  if message.error and message.error ~= vim.NIL then
    local err = message.error
    local data = type(err.data) == "table" and err.data or {}
    callback({ code = err.code, message = err.message, kind = data.kind or "internal" }, nil)
  else
    callback(nil, message.result)
  end
end

--- Calls `method` with `params`; `callback(err, result)` runs on the answer.
function Client:call(method, params, callback)
  if not self.job then
    callback({ code = -1, message = "not connected" }, nil)
    return
  end
  local id = self.next_id
  self.next_id = id + 1
  self.pending[id] = callback or function() end
  local request = { jsonrpc = "2.0", id = id, method = method, params = params or vim.empty_dict() }
  vim.fn.chansend(self.job, vim.json.encode(request) .. "\n")
end

--- Calls `method` and waits for the answer (at most `timeout_ms`); returns err, result.
function Client:call_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  self:call(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout_ms or 10000, function()
    return done
  end, 10) then
    return { code = -1, message = method .. " timed out" }, nil
  end
  return err, result
end

--- Subscribes to a session's events after `after_seq`; `on_item(item)` gets every item.
--- `callback(err, subscription_id)` runs once subscribed.
function Client:subscribe(session_id, after_seq, on_item, callback)
  self:call("session/subscribe", { session_id = session_id, after_seq = after_seq }, function(err, id)
    if not err then
      self.subscriptions[id] = on_item
    end
    if callback then
      callback(err, id)
    end
  end)
end

--- Ends a subscription.
function Client:unsubscribe(id)
  self.subscriptions[id] = nil
  self:call("session/unsubscribe", { subscription = id }, function() end)
end

--- Stops the job.
function Client:close()
  if self.job then
    vim.fn.jobstop(self.job)
  end
end

return M
