-- memorise.lua — a tiny GraphMERT trained until it knows a few planted tails, for the decoding
-- specs: roots of 10 with 3 leaf slots, tail_end masking with every tail group masked each step.
--   memorise{texts, records, relations = name → id, steps} → {model, tok, layout, seqs,
--     mask_opts, query = function(text, head, relation) → a gm.eval.decode query}
local gm = require "graphmert"

return function(o)
  gm.manual_seed(1)
  local tok = gm.data.tokenizer.train(o.texts, { vocab_size = 120 })
  local layout = gm.layout { roots = 10, leaves = 3 }
  local relations = 0
  for _ in pairs(o.relations) do relations = relations + 1 end
  local seqs = gm.data.corpus.build(o.records, tok, { layout = layout, relations = o.relations })
  local model = gm.nn.GraphMERT { vocab = tok:size(), hidden = 32, layers = 1, heads = 2, ffn = 64, roots = 10,
    leaves = 3, relations = relations, sbo = false, positions = true, dropout = 0, attention_dropout = 0,
    relation_dropout = 0 }
  local opt = gm.optim.adamw(model:named_parameters(), { lr = 1e-2, weight_decay = 0 })
  local mask_opts = { vocab = tok:size(), mask_id = tok.mask_id, layout = layout, sbo = false, root_rate = 0,
    leaf_rate = 1, replace = { 1, 0 }, tail_end = true, end_id = tok.pad_id,
    special = { [tok.pad_id] = true, [tok.cls_id] = true, [tok.sep_id] = true } }
  for _ = 1, o.steps do
    opt:zero_grad()
    model:loss(gm.data.masking.mask(gm.data.corpus.batch(seqs, 1, #seqs), mask_opts)):backward()
    opt:step()
  end
  local function query(text, head, relation)
    local toks = layout:fit(tok:encode(text))
    return { toks = toks, at = layout.find(toks, tok:encode(head)), head_length = 1, relation = relation or 1 }
  end
  return { model = model, tok = tok, layout = layout, seqs = seqs, mask_opts = mask_opts, query = query }
end
