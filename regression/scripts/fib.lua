-- Recursion and calls: naive Fibonacci plus a memoised variant.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local memo = {}
local function mfib(n)
  if n < 2 then return n end
  local v = memo[n]
  if v then return v end
  v = mfib(n - 1) + mfib(n - 2)
  memo[n] = v
  return v
end

local n = tonumber(arg and arg[1]) or 29
print(fib(n), mfib(80))
