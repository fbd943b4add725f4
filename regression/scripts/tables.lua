-- Tables and closures: inserts, sorting with a comparator, iteration, metatables.
local n = tonumber(arg and arg[1]) or 25000
local seed = 42
local function rand()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed
end
local t = {}
for i = 1, n do t[i] = { key = rand() % 100000, id = i } end
table.sort(t, function(a, b) if a.key ~= b.key then return a.key < b.key end return a.id < b.id end)
local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({ x = a.x + b.x, y = a.y + b.y }, Vec) end
local acc = setmetatable({ x = 0, y = 0 }, Vec)
for i = 1, n do acc = acc + setmetatable({ x = t[i].key % 7, y = i % 3 }, Vec) end
local hist = {}
for _, e in ipairs(t) do local b = e.key // 10000; hist[b] = (hist[b] or 0) + 1 end
local s = 0
for k, v in pairs(hist) do s = s + k * v end
print(t[1].key, t[n].key, acc.x, acc.y, s)
