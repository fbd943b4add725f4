-- PGO training (not measured): a word-frequency count over generated text, string building and formatting.
local n = tonumber(arg and arg[1]) or 6000
local syllables = { "ka", "lo", "mi", "nu", "re", "ta", "so", "vi" }
local seed = 7
local function rand(k)
  seed = (seed * 214013 + 2531011) % 4294967296
  return seed % k + 1
end
local words = {}
for i = 1, n do
  local w = {}
  for _ = 1, rand(3) + 1 do w[#w + 1] = syllables[rand(#syllables)] end
  words[i] = table.concat(w)
end
local text = table.concat(words, " ")
local freq = {}
for word in text:gmatch("%a+") do freq[word] = (freq[word] or 0) + 1 end
local keys = {}
for k in pairs(freq) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) if freq[a] ~= freq[b] then return freq[a] > freq[b] end return a < b end)
local out = {}
for i = 1, math.min(20, #keys) do out[i] = string.format("%s=%d", keys[i], freq[keys[i]]) end
print(#keys, table.concat(out, ","), (text:gsub("ka", "KA")):len())
