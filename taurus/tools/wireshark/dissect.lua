-- The interpreter of the generated tables above: it knows the dispatch
-- (layers.py's order) but no offset.  Every field is read as its location
-- says: nb bytes at off, bits pos..pos+w from the most significant bit.

-- Lua 5.2 (Wireshark 4.0) has bit32; 5.4 (Wireshark >= 4.4) has operators.
local int = math.tointeger or function(x) return x end
local band = (bit32 and bit32.band) or (bit and bit.band)
  or load("return function(a, b) return math.tointeger(a) & math.tointeger(b) end")()

local p_uet = Proto("uet", "Ultra Ethernet Transport (Taurus)")
local p_uet_ip = Proto("uet_ip", "UET over IP (entropy header)")
local p_csig = Proto("csig", "CSIG compact tag")
local p_csig_wide = Proto("csig_wide", "CSIG wide tag")
local p_int = Proto("uet_int", "Taurus INT trailer")

p_uet.prefs.udp_port = Pref.uint("UDP port", C.UET_UDP_PORT, "UDP destination port of UET")
p_uet.prefs.ip_proto = Pref.uint("IP protocol", C.UET_IP_PROTO, "IP protocol of UET over IP")
p_uet.prefs.tpid_compact = Pref.uint("CSIG compact TPID", C.CSIG_TPID_COMPACT, "ethertype")
p_uet.prefs.tpid_wide = Pref.uint("CSIG wide TPID", C.CSIG_TPID_WIDE, "ethertype")

local pf = {}
local uet_list, csig_list = {}, {}
for _, d in ipairs(FIELDS) do
  local abbr, label, ftype, fbase, enum = d[1], d[2], d[3], d[4], d[5]
  pf[abbr] = ProtoField[ftype](abbr, label, fbase, enum)
  if abbr:sub(1, 5) == "csig." then
    csig_list[#csig_list + 1] = pf[abbr]
  else
    uet_list[#uet_list + 1] = pf[abbr]
  end
end
p_uet.fields = uet_list
p_csig.fields = csig_list

local function holds(cond, vals)
  if cond == nil then return true end
  local v = vals[cond[1]] or 0
  return (band(v, cond[2]) == cond[3]) == cond[4]
end

local function flag_text(v, names)
  local set = {}
  for i, n in ipairs(names) do
    if band(v, int(2 ^ (i - 1))) ~= 0 and not n:match("^b%d$") then set[#set + 1] = n end
  end
  return #set > 0 and (" (" .. table.concat(set, ", ") .. ")") or ""
end

-- One header at off under tree: its fields, as the spec places them.
-- Returns the field values and the offset after it, or nil if truncated.
local function header(tvb, off, tree, hname, label)
  local h = HEADERS[hname]
  if tvb:len() < off + h.size then
    tree:add(tvb:range(off), hname .. ": truncated")
    return nil, off
  end
  local sub = tree:add(tvb:range(off, h.size), label or h.label)
  local vals = {}
  for _, f in ipairs(h.fields) do
    if holds(f.cond, vals) then
      local r = tvb:range(off + f.off, f.nb)
      local v = r:bitfield(f.pos, f.w)
      if f.signed and v >= 2 ^ (f.w - 1) then v = int(v - 2 ^ f.w) end
      vals[f.name] = v
      local item = sub:add(pf[f.abbr], r, v)
      if f.flags then item:append_text(flag_text(v, f.flags)) end
    end
  end
  return vals, off + h.size
end

local data = Dissector.get("data")

local function rest(tvb, off, pinfo, tree)
  if tvb:len() > off then data:call(tvb:range(off):tvb(), pinfo, tree) end
end

-- PDS header, then [probe], then SES by next_hdr (or, for CONTROL, the SRC record).
local function dissect_pds(tvb, off, pinfo, root)
  pinfo.cols.protocol = "UET"
  if tvb:len() < off + 2 then return end
  local t = tvb:range(off, 1):bitfield(0, 5)
  local hname = PDS_BY_TYPE[t] or "PDSPrologue"
  local v, o = header(tvb, off, root, hname, "PDS " .. (PDS_TYPES[t] or tostring(t)))
  if v == nil then return end
  local info = "UET " .. (PDS_TYPES[t] or ("type " .. t))
  if v.psn then info = info .. " psn=" .. v.psn end
  if v.cack_psn then info = info .. " cack_psn=" .. v.cack_psn end
  if v.nack_psn then info = info .. " nack_psn=" .. v.nack_psn end
  if hname == "PDSPrologue" then
    pinfo.cols.info = info
    return rest(tvb, o, pinfo, root)
  end
  if band(v.flags, C.F_TP) ~= 0 then
    local pv
    pv, o = header(tvb, o, root, "TaurusProbe")
    if pv == nil then return end
    info = info .. " +probe"
  end
  if t == C.T_CONTROL then
    info = info .. " " .. (CTL_TYPES[v.ctl_type] or tostring(v.ctl_type))
    if v.ctl_type == C.CTL_SRC then
      local sv
      sv, o = header(tvb, o, root, "BoltSRC")
      if sv == nil then return end
    end
  elseif SES_BY_NH[v.next_hdr] then
    local sv
    sv, o = header(tvb, o, root, SES_BY_NH[v.next_hdr])
    if sv == nil then return end
  end
  pinfo.cols.info = info
  rest(tvb, o, pinfo, root)
end

function p_uet.dissector(tvb, pinfo, tree)
  dissect_pds(tvb, 0, pinfo, tree:add(p_uet, tvb:range(0)))
  return tvb:len()
end

function p_uet_ip.dissector(tvb, pinfo, tree)
  local root = tree:add(p_uet, tvb:range(0))
  local v, o = header(tvb, 0, root, "UETEntropy")
  if v ~= nil then dissect_pds(tvb, o, pinfo, root) end
  return tvb:len()
end

-- A CSIG tag: the tag after its TPID, then the inner ethertype's dissector.
local function csig(hname, proto)
  return function(tvb, pinfo, tree)
    local root = tree:add(proto, tvb:range(0, math.min(tvb:len(), HEADERS[hname].size)))
    local v, o = header(tvb, 0, root, hname, hname)
    if v == nil then return tvb:len() end
    local n = DissectorTable.get("ethertype"):try(v.type, tvb:range(o):tvb(), pinfo, tree)
    return o + n
  end
end
p_csig.dissector = csig("CSIGCompact", p_csig)
p_csig_wide.dissector = csig("CSIGWide", p_csig_wide)

-- The INT trailer rides after the IP datagram, in bytes Ethernet carries
-- beyond it, so it is found from the whole frame: hop records, then a tail
-- whose magic ends the frame.
function p_int.dissector(tvb, pinfo, tree)
  local n = tvb:len()
  if n ~= tvb:reported_len() or n < C.ETH_SIZE + C.IPV4_SIZE + HEADERS.INTTail.size then return end
  local o, et = C.ETH_SIZE, tvb:range(C.ETH_SIZE - 2, 2):uint()
  if et == p_uet.prefs.tpid_compact or et == p_uet.prefs.tpid_wide then
    local size = HEADERS[et == p_uet.prefs.tpid_compact and "CSIGCompact" or "CSIGWide"].size
    et = tvb:range(o + size - 2, 2):uint()
    o = o + size
  end
  if et ~= C.ETH_P_IP or n < o + C.IPV4_SIZE then return end
  local ip_end = o + tvb:range(o + IPV4_LEN.off, IPV4_LEN.nb):uint()
  local ts = HEADERS.INTTail.size
  if n - ip_end < ts or tvb:range(n - ts, 2):uint() ~= C.INT_MAGIC then return end
  local nhop = tvb:range(n - ts + 2, 1):uint()
  local first = n - ts - nhop * HEADERS.INTHop.size
  if first < ip_end then return end
  local root = tree:add(p_int, tvb:range(first, n - first))
  for k = 0, nhop - 1 do
    header(tvb, first + k * HEADERS.INTHop.size, root, "INTHop", "INT hop " .. (k + 1))
  end
  header(tvb, n - ts, root, "INTTail", "INT tail")
end

-- UDP's lower port is tried first and the source port is an entropy value,
-- so a heuristic on the destination port catches what the port table misses
-- (with udp.try_heuristic_first).
local function heur_udp(tvb, pinfo, tree)
  if pinfo.dst_port ~= p_uet.prefs.udp_port then return false end
  p_uet.dissector(tvb, pinfo, tree)
  return true
end

local bound = {}
local function bind()
  if bound.udp then DissectorTable.get("udp.port"):remove(bound.udp, p_uet) end
  if bound.ip then DissectorTable.get("ip.proto"):remove(bound.ip, p_uet_ip) end
  if bound.tc then DissectorTable.get("ethertype"):remove(bound.tc, p_csig) end
  if bound.tw then DissectorTable.get("ethertype"):remove(bound.tw, p_csig_wide) end
  bound = {udp = p_uet.prefs.udp_port, ip = p_uet.prefs.ip_proto,
           tc = p_uet.prefs.tpid_compact, tw = p_uet.prefs.tpid_wide}
  DissectorTable.get("udp.port"):add(bound.udp, p_uet)
  DissectorTable.get("ip.proto"):add(bound.ip, p_uet_ip)
  DissectorTable.get("ethertype"):add(bound.tc, p_csig)
  DissectorTable.get("ethertype"):add(bound.tw, p_csig_wide)
end
bind()
p_uet.prefs_changed = bind
p_uet:register_heuristic("udp", heur_udp)
register_postdissector(p_int)
