-- An allocation-heavy Lua workload with deterministic output.
--
-- Run by tests/test_real_programs.py under Debian's /usr/bin/lua5.4 (stripped
-- PIE, the interpreter linked in). Lua gets every block from one function,
-- which calls realloc to allocate, grow and shrink, and free to release: so
-- realloc(NULL, n), growth within and out of a pool, and shrinking all run
-- here. Errors unwind with longjmp through the interpreter's C frames.
-- String hashes are seeded per run, so nothing prints in pairs() order.

local N = 20000

-- Tables: array and hash parts grown one element at a time.
local records = {}
for i = 1, N do
  records[i] = { id = i, name = "n" .. i, tags = { i % 7, i % 11 } }
end
local sum = 0
for i = 1, N, 3 do
  local r = records[i]
  sum = sum + r.id + #r.name + r.tags[1] + r.tags[2]
end
print("tables", #records, sum)

-- Strings: formatting, repetition, buffers that grow, substitution.
local parts = {}
for i = 1, 5000 do
  parts[#parts + 1] = string.format("%05d:%s", i, string.rep("ab", i % 13))
end
local joined = table.concat(parts, ",")
local replaced, count = joined:gsub("ab", "xyz")
print("strings", #joined, #replaced, count, replaced:sub(1, 24))

-- Closures with upvalues of their own.
local function counter()
  local c = 0
  return function() c = c + 1; return c end
end
local counters = {}
for i = 1, 1000 do counters[i] = counter() end
local total = 0
for _ = 1, 5 do
  for i = 1, #counters do total = total + counters[i]() end
end
print("closures", total)

-- Coroutines: each has a stack of its own, grown by realloc.
local function squares(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * i) end
  end)
end
local acc = 0
for _ = 1, 200 do
  for v in squares(50) do acc = acc + v end
end
print("coroutines", acc)

-- Errors: error() longjmps out of the frames that made the objects.
local caught = 0
for i = 1, 2000 do
  local ok, err = pcall(function()
    local scratch = { i, tostring(i), { i } }
    if i % 3 == 0 then error({ code = i }) end
    return scratch
  end)
  if not ok then caught = caught + err.code end
end
print("errors", caught)
local function deep(n) return deep(n + 1) + 1 end
local ok, msg = pcall(deep, 1)
print("overflow", ok, string.find(msg, "stack overflow", 1, true) ~= nil)

-- Sorting with a comparator; metatables and operators.
local words = {}
for i = 1, 3000 do words[i] = string.format("%x", (i * 7919) % 10007) end
table.sort(words, function(a, b) return #a < #b or (#a == #b and a < b) end)
print("sort", words[1], words[#words])
local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({ x = a.x + b.x }, Vec) end
local v = setmetatable({ x = 0 }, Vec)
for i = 1, 5000 do v = v + setmetatable({ x = i }, Vec) end
print("meta", v.x)

-- Collection: drop most of it, build a hash, empty half of it, collect again.
records, parts, counters = nil, nil, nil
collectgarbage("collect")
local big = {}
for i = 1, N do big["k" .. i] = i end
for i = 1, N, 2 do big["k" .. i] = nil end
collectgarbage("collect")
local keys = {}
for k in pairs(big) do keys[#keys + 1] = k end
table.sort(keys)
print("gc", #keys, keys[1], keys[#keys])

-- A file: stdio's buffers come from the C library's own malloc.
local f = assert(io.open("out.txt", "w"))
for i = 1, 1000 do f:write(i, "\n") end
f:close()
local lines = 0
for line in io.lines("out.txt") do lines = lines + tonumber(line) end
print("file", lines)
