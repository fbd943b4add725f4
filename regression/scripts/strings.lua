-- String library: formatting, concatenation, pattern matching and substitution.
local n = tonumber(arg and arg[1]) or 20000
local parts = {}
for i = 1, n do
  parts[#parts + 1] = string.format("%05d:%s", i, string.rep(string.char(97 + i % 26), i % 7 + 1))
end
local text = table.concat(parts, " ")
local count = 0
for word in text:gmatch("%d+:(%a+)") do count = count + #word end
local swapped, subs = text:gsub("(%d+):(%a+)", "%2=%1")
local upper = swapped:upper()
print(count, subs, #upper, upper:find("ZZZZZZZ", 1, true) ~= nil)
