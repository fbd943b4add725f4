-- PGO training (not measured): objects with metatables, closures, coroutines and integer/float arithmetic.
local n = tonumber(arg and arg[1]) or 4000
local Account = {}
Account.__index = Account
function Account.new(id) return setmetatable({ id = id, balance = 0, log = {} }, Account) end
function Account:deposit(v) self.balance = self.balance + v; self.log[#self.log + 1] = v end
function Account:withdraw(v)
  if v > self.balance then return false end
  self.balance = self.balance - v
  self.log[#self.log + 1] = -v
  return true
end
local accounts = {}
for i = 1, 50 do accounts[i] = Account.new(i) end
local gen = coroutine.wrap(function()
  local x = 1
  while true do x = (x * 48271) % 2147483647; coroutine.yield(x) end
end)
local refused = 0
for _ = 1, n * 10 do
  local a = accounts[gen() % #accounts + 1]
  local v = gen() % 100
  if gen() % 3 == 0 then
    if not a:withdraw(v) then refused = refused + 1 end
  else
    a:deposit(v)
  end
end
local function counter()
  local c = 0
  return function(k) c = c + k; return c end
end
local total, f, mean = 0, counter(), 0.0
for i, a in ipairs(accounts) do
  total = total + a.balance
  mean = mean + (#a.log - mean) / i
  f(#a.log)
end
print(total, refused, f(0), string.format("%.3f", mean))
