-- report.lua — what the training and evaluation commands show: the evaluation table of
-- masked-token accuracy and tail prediction, and pictures drawn by gnuplot.
--   table(rows) → markdown text      plot(path, terminal, commands) → whether a picture was written
--   verdict(model, frequency, hints, held_out) → one plain line: does the model beat the most frequent tail?
local gm = require "graphmert"

local M = {}

-- Runs gnuplot on `commands` (a list of lines) with `terminal` ("png size 900,600") and writes
-- the picture to `path`; true when it did, false when gnuplot is missing or failed (the caller
-- says there is no picture). gnuplot writes to a temporary file: a path is never put in its
-- script, where a quote or a line break in it would be gnuplot's to run.
function M.plot(path, terminal, commands)
  local made, tmp = pcall(os.tmpname)
  if not made then return false end
  local script = { "set terminal " .. terminal, string.format("set output '%s'", tmp), table.unpack(commands) }
  local gp = io.popen("gnuplot 2>&1", "w")
  local ok = gp ~= nil and gp:write(table.concat(script, "\n"), "\n") ~= nil and gp:close() == true
  local f = ok and io.open(tmp, "rb")
  local picture = f and f:read("a")
  if f then f:close() end
  os.remove(tmp)
  return type(picture) == "string" and #picture > 0 and gm.write_atomic(path, { picture }) == true
end

local function rule(widths)
  local parts = {}
  for i, w in ipairs(widths) do parts[i] = string.rep("-", w + 2) end
  return "|" .. table.concat(parts, "|") .. "|"
end

-- The evaluation table: one row per {name, acc (masked-token accuracy or nil), tails (from
-- tail_metrics)}, tail prediction on held-out facts and on held-out entities side by side: the
-- whole tail decoded without its length and ranked among the known tails (hits@1, hits@10,
-- MRR@10), then the first-token hits@1 with the length given (the earlier protocol).
function M.table(rows)
  local lines = {
    "| model                    | MLM acc | facts: tail@1 | tail@10 | MRR@10 | first@1 | entities: tail@1 | tail@10 | MRR@10 | first@1 |",
    rule { 24, 7, 13, 7, 6, 7, 16, 7, 6, 7 } }
  -- a figure over no cases is "-", not 0.000
  local function cells(m)
    local v = { m.tail.hits1, m.tail.hits10, m.tail.mrr, m.hits1 }
    for i = 1, 4 do v[i] = m.n > 0 and string.format("%.3f", v[i]) or "-" end
    return v
  end
  for _, r in ipairs(rows) do
    local f, s = cells(r.tails.facts), cells(r.tails.entities)
    lines[#lines + 1] = string.format("| %-24s | %7s | %13s | %7s | %6s | %7s | %16s | %7s | %6s | %7s |",
      r.name, r.acc and string.format("%.3f", r.acc) or "-", f[1], f[2], f[3], f[4], s[1], s[2], s[3], s[4])
  end
  local f, s = rows[1].tails.facts, rows[1].tails.entities
  lines[#lines + 1] = string.format("(tail prediction on %d held-out facts on seen text and %d triples of held-out entities " ..
    "on unseen text: those whose head is in the text and whose tail fits the leaves, at most eval_triples; " ..
    "tail@k: the whole tail among the decoder's top k of the known tails, its length not given; first@1: the " ..
    "first token's hits@1 with the length given; -: nothing to score)", f.n, s.n)
  return table.concat(lines, "\n")
end

-- The verdict after training, for a user who cannot read the table yet: whether GraphMERT ranks
-- the held-out tails better than the most frequent tail per relation, beyond the noise. Both are
-- scored on the same triples (held-out facts and held-out entities' triples, paired), by MRR@10
-- of the whole tail among the known tails; the interval is a paired bootstrap over the triples.
-- model, frequency: tail_metrics results; hints: what to try, in order ({"--steps N", ...});
-- held_out: whether the config held anything out (heldout or heldout_triples above 0).
local FEW = 30 -- held-out triples below which the comparison is too weak to say much
function M.verdict(model, frequency, hints, held_out)
  if not held_out then
    return "verdict: none: nothing was held out to measure this model on (heldout = 0); a run of the same config " ..
      "that holds entities out measures it"
  end
  local units = {}
  for _, part in ipairs { "facts", "entities" } do
    local a, b = model[part].tail and model[part].tail.ranks or {}, frequency[part].tail and frequency[part].tail.ranks or {}
    for k = 1, math.min(#a, #b) do units[#units + 1] = { a[k], b[k] } end
  end
  if #units == 0 then
    return "verdict: no held-out tail to measure the model on (no held-out triple whose head is in its passage and whose " ..
      "tail fits the leaves): raise heldout or heldout_triples"
  end
  local function mrr(i) return function(sample)
    local sum = 0
    for _, u in ipairs(sample) do if u[i] <= 10 then sum = sum + 1 / u[i] end end
    return sum / #sample
  end end
  local low, high, diff = require("graphmert.eval.stats").paired(units, mrr(1), mrr(2))
  local figures = string.format("MRR@10 %.3f against %.3f, difference %+.3f [%+.3f, %+.3f] over %d held-out triples",
    mrr(1)(units), mrr(2)(units), diff, low, high, #units)
  local few = #units < FEW and string.format("; %d triples are few: a larger heldout measures it better", #units) or ""
  if low > 0 then
    return "verdict: GraphMERT beats the most frequent tail on held-out tails beyond the noise (" .. figures .. ")" .. few ..
      ". It ranks unseen tails better than their frequency does; whether its new triples hold is for a review " ..
      "(graphmert page) or for probabilities (graphmert calibrate) to say"
  end
  return string.format("verdict: GraphMERT does %s the most frequent tail on held-out tails (%s): its extractions " ..
    "are not yet worth more than the seed graph's commonest tails. Try %s%s", high < 0 and "worse than" or
    "not beat, beyond the noise,", figures, table.concat(hints, "; "), few)
end

return M
