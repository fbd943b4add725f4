-- Floating point: a small n-body simulation (arithmetic, field access, loops).
local sqrt = math.sqrt
local bodies = {
  { x = 0, y = 0, z = 0, vx = 0, vy = 0, vz = 0, m = 39.47 },
  { x = 4.84, y = -1.16, z = -0.10, vx = 0.61, vy = 2.81, vz = -0.02, m = 0.037 },
  { x = 8.34, y = 4.12, z = -0.40, vx = -1.01, vy = 1.82, vz = 0.008, m = 0.011 },
  { x = 12.89, y = -15.11, z = -0.22, vx = 1.08, vy = 0.87, vz = -0.01, m = 0.0017 },
  { x = 15.37, y = -25.91, z = 0.17, vx = 0.97, vy = 0.59, vz = -0.03, m = 0.002 },
}
local function advance(dt)
  local nb = #bodies
  for i = 1, nb do
    local bi = bodies[i]
    for j = i + 1, nb do
      local bj = bodies[j]
      local dx, dy, dz = bi.x - bj.x, bi.y - bj.y, bi.z - bj.z
      local d2 = dx * dx + dy * dy + dz * dz
      local mag = dt / (d2 * sqrt(d2))
      bi.vx, bi.vy, bi.vz = bi.vx - dx * bj.m * mag, bi.vy - dy * bj.m * mag, bi.vz - dz * bj.m * mag
      bj.vx, bj.vy, bj.vz = bj.vx + dx * bi.m * mag, bj.vy + dy * bi.m * mag, bj.vz + dz * bi.m * mag
    end
  end
  for i = 1, nb do
    local b = bodies[i]
    b.x, b.y, b.z = b.x + dt * b.vx, b.y + dt * b.vy, b.z + dt * b.vz
  end
end
local function energy()
  local e = 0
  for i = 1, #bodies do
    local b = bodies[i]
    e = e + 0.5 * b.m * (b.vx * b.vx + b.vy * b.vy + b.vz * b.vz)
    for j = i + 1, #bodies do
      local c = bodies[j]
      local dx, dy, dz = b.x - c.x, b.y - c.y, b.z - c.z
      e = e - b.m * c.m / sqrt(dx * dx + dy * dy + dz * dz)
    end
  end
  return e
end
local steps = tonumber(arg and arg[1]) or 15000
for _ = 1, steps do advance(0.01) end
print(string.format("%.9f", energy()))
