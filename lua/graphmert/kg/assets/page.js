"use strict";
(function () {
const started = performance.now();
const D = JSON.parse(document.getElementById("kg-data").textContent);
const list = x => Array.isArray(x) ? x : [];
const PAGE = 100, MAX_NEIGHBOURS = 36;
const R = list(D.relations), DEC = list(D.decodings);
// case and accents folded, and typographic marks as their ASCII twins, as the linker folds names:
// "Citroën" and "citroen", "Crohn’s" and "Crohn's" alike
const SAME_MARK = { "’": "'", "‘": "'", "“": '"', "”": '"', "‐": "-", "‑": "-", "‒": "-", "–": "-", "µ": "μ" };
const fold = s => s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase().replace(/ς/g, "σ") // a word's last sigma too
  .replace(/[’‘“”‐‑‒–µ]/g, c => SAME_MARK[c]);
const E = list(D.entities).map(([id, name, type, seed, aliases], i) =>
  ({ i, id, name, type, seed: !!seed, aliases: list(aliases), folded: [name, ...list(aliases)].map(fold) }));
const byId = new Map(E.map(e => [e.id, e]));
// marks: per source, where the linker found the head and the tail ([head start, end, tail start,
// end], null where not), when the page was made with the seed graph and the passages
const T = list(D.triples).map(([h, r, t, score, count, dec, seed, src, marks], i) =>
  ({ i, h, r, t, score, count, dec: DEC[dec], seed: !!seed, src: list(src), marks: list(marks), fact: false }));
const F = list(D.facts).map(([h, r, t], i) => ({ i, h, r, t, fact: true }));
const PASSAGES = D.passages && !Array.isArray(D.passages) ? D.passages : {};
const LINES = D.lines && !Array.isArray(D.lines) ? D.lines : {}; // passage id → line, where the id is a record's own
const byScore = T.slice().sort((a, b) => b.score - a.score || b.count - a.count);
// a fixed shuffle (the same on every visit), to review a random sample rather than the best
let shuffled = null;
function randomOrder() {
  if (shuffled) return shuffled;
  let seed = 1;
  const random = () => { seed = (seed + 0x6D2B79F5) | 0; let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x; return ((x ^ (x >>> 14)) >>> 0) / 4294967296; };
  shuffled = T.slice();
  for (let i = shuffled.length - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]]; }
  return shuffled;
}
const touching = E.map(() => []), factsOf = E.map(() => []);
for (const t of byScore) { touching[t.h].push(t); if (t.t !== t.h) touching[t.t].push(t); }
for (const f of F) { factsOf[f.h].push(f); if (f.t !== f.h) factsOf[f.t].push(f); }
let smin = Infinity, smax = -Infinity;
for (const t of T) { if (t.score < smin) smin = t.score; if (t.score > smax) smax = t.score; }
if (!(smax > smin)) { smin = (isFinite(smin) ? smin : 0) - 1; smax = smin + 1; }

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
  "#393b79", "#ad494a", "#637939", "#7b4173", "#3182bd", "#e6550d"];
const colour = r => r < PALETTE.length ? PALETTE[r] : `hsl(${(r * 137.508) % 360} 55% 42%)`;
const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const fmt = x => x.toFixed(3);
const short = s => s.length > 26 ? s.slice(0, 25) + "…" : s; // a node's label; its tooltip has the whole name

// ---- state, kept in the URL's fragment ----
let S;
function readState() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ""));
  const min = p.get("min");
  S = {
    e: p.get("e") || null,
    r: p.has("r") ? new Set(p.getAll("r").filter(name => name !== "").map(name => R.indexOf(name)).filter(i => i >= 0)) : null,
    min: min !== null && min !== "" && isFinite(+min) ? +min : null,
    kind: ["new", "seed"].includes(p.get("kind")) ? p.get("kind") : "all",
    facts: p.get("facts") !== "0",
    order: p.get("order") === "random" ? "random" : "score",
  };
}
function fragment(patch) {
  const s = Object.assign({}, S, patch || {});
  const p = new URLSearchParams();
  if (s.e) p.set("e", s.e);
  if (s.r && s.r.size === 0) p.set("r", ""); // none
  else if (s.r && s.r.size < R.length) [...s.r].sort((a, b) => a - b).forEach(i => p.append("r", R[i]));
  if (s.min !== null) p.set("min", String(s.min));
  if (s.kind !== "all") p.set("kind", s.kind);
  if (!s.facts) p.set("facts", "0");
  if (s.order !== "score") p.set("order", s.order);
  return "#" + p.toString();
}
function go(patch) { location.hash = fragment(patch); } // a new entity: a new history entry
function refine(patch) { history.replaceState(null, "", fragment(patch)); readState(); render(); } // a filter: the same entry

const relationShown = r => !S.r || S.r.has(r);
const keepTriple = t => relationShown(t.r) && (S.min === null || t.score >= S.min) &&
  (S.kind === "all" || (S.kind === "seed") === t.seed);
const keepFact = f => S.facts && relationShown(f.r);

// ---- review decisions ----
const STORE_KEY = "graphmert-review:" + D.kg;
const tripleKey = t => E[t.h].id + "\t" + R[t.r] + "\t" + E[t.t].id;
const decisionKey = d => (d.head_id || "new:" + d.head) + "\t" + d.relation + "\t" + (d.tail_id || "new:" + d.tail);
const keyIndex = new Map(T.map(t => [tripleKey(t), t]));
let decisions = new Map();
try { decisions = new Map(JSON.parse(localStorage.getItem(STORE_KEY) || "[]")); } catch (e) { decisions = new Map(); }
function saveDecisions() {
  try { localStorage.setItem(STORE_KEY, JSON.stringify([...decisions])); } catch (e) { /* a private window: kept for this visit */ }
  $("review-count").textContent = decisions.size;
}
function decide(t, verdict) {
  const key = tripleKey(t), old = decisions.get(key);
  if (old && old.verdict === verdict) decisions.delete(key); // a second click takes the decision back
  else decisions.set(key, { verdict, reviewed: new Date().toISOString() });
  saveDecisions();
}
function reviewJsonl() {
  const lines = [];
  for (const t of T) {
    const d = decisions.get(tripleKey(t));
    if (!d) continue;
    const h = E[t.h], tl = E[t.t];
    lines.push(JSON.stringify({ head: h.name, head_id: h.id.startsWith("new:") ? null : h.id, relation: R[t.r], tail: tl.name,
      tail_id: tl.id.startsWith("new:") ? null : tl.id, verdict: d.verdict, score: t.score, reviewed: d.reviewed }));
  }
  return lines.length ? lines.join("\n") + "\n" : "";
}
function importReview(text) {
  let added = 0, unknown = 0, bad = 0;
  text.split("\n").forEach(line => {
    if (!line.trim()) return;
    let d;
    try { d = JSON.parse(line); } catch (e) { bad++; return; }
    if (!d || (d.verdict !== "accept" && d.verdict !== "reject")) { bad++; return; }
    const t = keyIndex.get(decisionKey(d));
    if (!t) { unknown++; return; }
    decisions.set(tripleKey(t), { verdict: d.verdict, reviewed: d.reviewed || new Date().toISOString() });
    added++;
  });
  saveDecisions();
  return `${added} decisions loaded` + (unknown ? `, ${unknown} about triples this graph lacks` : "") +
    (bad ? `, ${bad} lines unreadable` : "");
}

// ---- pieces of HTML ----
function entityLink(i) {
  const e = E[i];
  return `<a class="entity${e.seed ? "" : " newent"}" href="${esc(fragment({ e: e.id }))}" title="${esc(e.id)}">${esc(e.name)}</a>`;
}
function relationLabel(r) { return `<span class="rel" style="color:${colour(r)}">${esc(R[r])}</span>`; }
function tripleRow(t) {
  if (t.fact) {
    return `<tr class="fact" data-relation="${esc(R[t.r])}"><td>${entityLink(t.h)}</td><td>${relationLabel(t.r)}</td>` +
      `<td>${entityLink(t.t)}</td><td class="num">–</td><td class="num">–</td><td></td><td><span class="badge fact">seed graph</span></td><td></td></tr>`;
  }
  const d = decisions.get(tripleKey(t)), v = d ? d.verdict : "";
  const cls = v === "accept" ? "accepted" : v === "reject" ? "rejected" : "";
  return `<tr class="triple ${cls}" data-triple="${t.i}" data-relation="${esc(R[t.r])}"><td>${entityLink(t.h)}</td>` +
    `<td>${relationLabel(t.r)}</td><td>${entityLink(t.t)}</td><td class="num">${fmt(t.score)}</td><td class="num">${t.count}</td>` +
    `<td>${esc(t.dec)}</td><td>${t.seed ? '<span class="badge seed" title="the seed graph holds this triple">in seed graph</span>'
      : '<span class="badge new" title="the seed graph lacks this triple">new</span>'}</td>` +
    `<td class="review"><button class="evidence-toggle" type="button" title="the passages it was read from">evidence (${t.src.length})</button> ` +
    `<button class="accept" type="button" aria-pressed="${v === "accept"}" title="correct">✓</button> ` +
    `<button class="reject" type="button" aria-pressed="${v === "reject"}" title="wrong">✗</button></td></tr>`;
}
const HEADER = "<tr><th>head</th><th>relation</th><th>tail</th><th>score</th><th>passages</th><th>decoding</th><th></th><th>review</th></tr>";

// the text folded, with the place in the text each folded character comes from (one more: the end)
function foldText(text) {
  let out = "", i = 0;
  const from = [];
  for (const ch of text) {
    const f = fold(ch);
    for (let k = 0; k < f.length; k++) from.push(i);
    out += f;
    i += ch.length;
  }
  from.push(i);
  return { text: out, from };
}
// where an entity is mentioned in a folded passage, as [start, end) of the original text, when
// the page has no linker's marks (made without the seed graph): the earliest whole-word
// occurrence of one of its folded names (the longest at one place; "liver", not the one in
// "delivery"); never inside a word, where a short alias ("AD") would mark what is no mention
const WORD = /[\p{L}\p{N}]/u;
function findMention(p, names) {
  let best = null;
  for (const n of names) {
    if (!n) continue;
    for (let at = p.text.indexOf(n); at >= 0; at = p.text.indexOf(n, at + 1)) {
      if (!WORD.test(p.text[at - 1] || " ") && !WORD.test(p.text[at + n.length] || " ")) {
        if (!best || at < best[0] || (at === best[0] && at + n.length > best[1])) best = [at, at + n.length];
        break;
      }
    }
  }
  return best && [p.from[best[0]], p.from[best[1]]];
}
function markPassage(text, t, k) {
  const spans = [], m = t.marks[k];
  let h, tl;
  if (Array.isArray(m)) {
    h = m[0] !== null ? [m[0], m[1]] : null;
    tl = m[2] !== null ? [m[2], m[3]] : null;
  } else {
    const p = foldText(text);
    h = findMention(p, E[t.h].folded);
    tl = findMention(p, E[t.t].folded);
  }
  if (h) spans.push([h[0], h[1], "head"]);
  if (tl && (!h || tl[1] <= h[0] || tl[0] >= h[1])) spans.push([tl[0], tl[1], "tail"]);
  spans.sort((a, b) => a[0] - b[0]);
  let out = "", at = 0;
  for (const [s, e, cls] of spans) { out += esc(text.slice(at, s)) + `<mark class="${cls}">` + esc(text.slice(s, e)) + "</mark>"; at = e; }
  return out + esc(text.slice(at));
}
function evidenceHtml(t) {
  if (!t.src.length) return '<p class="muted">No source passages are recorded for this triple.</p>';
  return t.src.map((id, k) => {
    const text = PASSAGES[id];
    const line = LINES[id], of = D.corpus ? " of " + esc(D.corpus) : "";
    const where = `<div class="where">${line === undefined ? `line ${esc(id)}${of}` : `${esc(id)} (line ${esc(line)}${of})`}</div>`;
    return `<div class="passage">${where}${text === undefined ? '<span class="muted">(the page was made without the corpus)</span>' : markPassage(text, t, k)}</div>`;
  }).join("");
}

// a table of triples shown PAGE rows at a time
function tripleTable(container, rows, empty) {
  let shown = 0;
  container.innerHTML = rows.length ? `<table><thead>${HEADER}</thead><tbody></tbody></table><div class="more"></div>`
    : `<p class="muted">${empty}</p>`;
  if (!rows.length) return;
  const body = container.querySelector("tbody"), more = container.querySelector(".more");
  function showMore() {
    const next = rows.slice(shown, shown + PAGE);
    body.insertAdjacentHTML("beforeend", next.map(tripleRow).join(""));
    shown += next.length;
    more.innerHTML = shown < rows.length ? `<button type="button">Show ${Math.min(PAGE, rows.length - shown)} more</button> <span class="muted">${shown} of ${rows.length}</span>` : "";
    const b = more.querySelector("button");
    if (b) b.onclick = showMore;
  }
  showMore();
  body.addEventListener("click", ev => {
    const button = ev.target.closest("button"), row = ev.target.closest("tr.triple");
    if (!button || !row) return;
    const t = T[+row.dataset.triple];
    if (button.classList.contains("evidence-toggle")) {
      const next = row.nextElementSibling;
      if (next && next.classList.contains("evidence")) next.remove();
      else row.insertAdjacentHTML("afterend", `<tr class="evidence"><td colspan="8">${evidenceHtml(t)}</td></tr>`);
    } else if (button.classList.contains("accept") || button.classList.contains("reject")) {
      decide(t, button.classList.contains("accept") ? "accept" : "reject");
      const v = (decisions.get(tripleKey(t)) || {}).verdict || "";
      row.classList.toggle("accepted", v === "accept");
      row.classList.toggle("rejected", v === "reject");
      row.querySelector("button.accept").setAttribute("aria-pressed", v === "accept");
      row.querySelector("button.reject").setAttribute("aria-pressed", v === "reject");
    }
  });
}

// ---- the neighbourhood drawing ----
const SVG_W = 900, SVG_H = 520;
function neighbourhoodSvg(c, edges) {
  const groups = new Map(); // neighbour → its edges
  for (const x of edges) {
    const other = x.h === c ? x.t : x.h;
    if (other === c) continue;
    if (!groups.has(other)) groups.set(other, []);
    groups.get(other).push(x);
  }
  const best = g => Math.max(...g.map(x => x.fact ? -1e9 : x.score));
  const neighbours = [...groups.entries()].sort((a, b) => best(b[1]) - best(a[1])).slice(0, MAX_NEIGHBOURS);
  const outs = neighbours.filter(([, g]) => g.some(x => x.h === c)), ins = neighbours.filter(([, g]) => !g.some(x => x.h === c));
  const cx = SVG_W / 2, cy = SVG_H / 2, rx = SVG_W / 2 - 190, ry = SVG_H / 2 - 50;
  const pos = new Map([[c, [cx, cy]]]);
  function place(group, from, to) {
    group.forEach(([n], k) => {
      const a = group.length === 1 ? (from + to) / 2 : from + (to - from) * k / (group.length - 1);
      pos.set(n, [cx + rx * Math.cos(a), cy + ry * Math.sin(a)]);
    });
  }
  // out-neighbours to the right, in-neighbours to the left, each side an arc as wide as its share
  const share = Math.min(0.85, Math.max(0.15, outs.length / (outs.length + ins.length)));
  const half = group => group === outs ? Math.PI * share * 0.92 : Math.PI * (1 - share) * 0.92;
  if (!ins.length) place(outs, -Math.PI * 0.95, Math.PI * 0.95);
  else if (!outs.length) place(ins, Math.PI * 0.05, Math.PI * 1.95);
  else { place(outs, -half(outs), half(outs)); place(ins, Math.PI - half(ins), Math.PI + half(ins)); }
  const labelled = edges.length <= 14; // more labels than that hide each other: the legend and tooltips tell
  const used = new Set();
  let defs = "", paths = "", labels = "";
  for (const [n, g] of neighbours) {
    g.forEach((x, k) => {
      used.add(x.r);
      const [x1, y1] = pos.get(x.h), [x2, y2] = pos.get(x.t);
      const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy) || 1;
      const bend = (k - (g.length - 1) / 2) * 34;
      const mx = (x1 + x2) / 2 - dy / len * bend, my = (y1 + y2) / 2 + dx / len * bend;
      const back = (x.t === c ? 15 : 10), ex = x2 - (x2 - mx) / Math.hypot(x2 - mx, y2 - my) * back,
        ey = y2 - (y2 - my) / Math.hypot(x2 - mx, y2 - my) * back;
      const width = x.fact ? 1.5 : 1 + 5 * (x.score - smin) / (smax - smin);
      const tip = x.fact ? `${E[x.h].name} ${R[x.r]} ${E[x.t].name} · a seed-graph fact`
        : `${E[x.h].name} ${R[x.r]} ${E[x.t].name} · score ${fmt(x.score)} · ${x.count} passage${x.count === 1 ? "" : "s"}`;
      paths += `<path class="edge${x.fact ? " fact" : ""}" data-relation="${esc(R[x.r])}" d="M${x1.toFixed(1)},${y1.toFixed(1)} Q${mx.toFixed(1)},${my.toFixed(1)} ${ex.toFixed(1)},${ey.toFixed(1)}" ` +
        `stroke="${colour(x.r)}" stroke-width="${width.toFixed(2)}" marker-end="url(#arrow-${x.r})"><title>${esc(tip)}</title></path>`;
      const lx = 0.25 * x1 + 0.5 * mx + 0.25 * x2, ly = 0.25 * y1 + 0.5 * my + 0.25 * y2;
      if (labelled) labels += `<text class="edge-label" x="${lx.toFixed(1)}" y="${ly.toFixed(1)}" text-anchor="middle" fill="${colour(x.r)}">${esc(R[x.r])}</text>`;
    });
  }
  for (const r of used) {
    defs += `<marker id="arrow-${r}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">` +
      `<path d="M0,0 L10,5 L0,10 z" fill="${colour(r)}"/></marker>`;
  }
  let nodes = "";
  for (const [n, [x, y]] of pos) {
    const e = E[n], centre = n === c;
    const anchor = centre ? "middle" : x > cx + 5 ? "start" : x < cx - 5 ? "end" : "middle";
    const tx = centre ? 0 : anchor === "start" ? 11 : anchor === "end" ? -11 : 0, ty = centre ? -18 : anchor === "middle" ? (y < cy ? -12 : 20) : 4;
    nodes += `<g class="node${centre ? " center" : ""}${e.seed ? "" : " newent"}" data-id="${esc(e.id)}" transform="translate(${x.toFixed(1)},${y.toFixed(1)})">` +
      `<circle r="${centre ? 12 : 7}"/><text x="${tx}" y="${ty}" text-anchor="${anchor}">${esc(short(e.name))}</text>` +
      `<title>${esc(e.name)} (${esc(e.id)}${e.type ? ", " + esc(e.type) : ""})${e.seed ? "" : " — not in the seed graph"}</title></g>`;
  }
  const legend = [...used].sort((a, b) => a - b).map(r => `<span><i style="border-color:${colour(r)}"></i>${esc(R[r])}</span>`).join("") +
    '<span>— extracted (width: score) · - - seed-graph fact · dashed node: new entity</span>' +
    (groups.size > neighbours.length ? `<span>${groups.size - neighbours.length} more neighbours in the table below</span>` : "");
  return `<svg class="graph" id="neighbourhood" viewBox="0 0 ${SVG_W} ${SVG_H}" role="img" aria-label="neighbourhood of ${esc(E[c].name)}">` +
    `<defs>${defs}</defs><g class="edges">${paths}</g><g class="labels">${labels}</g><g class="nodes">${nodes}</g></svg><div class="legend">${legend}</div>`;
}

// ---- views ----
function renderEntity(e) {
  const c = e.i;
  const triples = touching[c].filter(keepTriple), facts = factsOf[c].filter(keepFact);
  const degree = touching[c].length + factsOf[c].length;
  $("main").innerHTML = `<section class="panel"><h2>${esc(e.name)} <span class="muted">${esc(e.id)}${e.type ? " · " + esc(e.type) : ""}` +
    `${e.seed ? "" : " · not in the seed graph"}</span></h2>` +
    (e.aliases.length ? `<p class="aliases">also: ${e.aliases.map(esc).join(", ")}</p>` : "") +
    (triples.length + facts.length ? neighbourhoodSvg(c, triples.concat(facts))
      : `<p class="muted">${degree ? "The filters hide all of its " + degree + " triples." : "No triples."}</p>`) + `</section>` +
    `<section class="panel"><h2>Extracted triples (${triples.length})</h2><div id="entity-triples"></div></section>` +
    `<section class="panel"><h2>Seed-graph facts (${facts.length})</h2><div id="entity-facts"></div></section>`;
  tripleTable($("entity-triples"), triples, "No extracted triples pass the filters.");
  tripleTable($("entity-facts"), facts, S.facts ? "No seed-graph facts pass the filters." : "Seed-graph facts are hidden.");
  $("main").querySelectorAll("svg .node").forEach(g => g.addEventListener("click", () => go({ e: g.dataset.id })));
}

function histogramSvg(rows) {
  const BINS = 20, w = 420, h = 130, counts = new Array(BINS).fill(0);
  for (const t of rows) counts[Math.min(BINS - 1, Math.floor((t.score - smin) / (smax - smin) * BINS))]++;
  const top = Math.max(1, ...counts), bw = w / BINS;
  const bars = counts.map((n, k) => `<rect x="${(k * bw + 1).toFixed(1)}" y="${(h - 20 - (h - 30) * n / top).toFixed(1)}" width="${(bw - 2).toFixed(1)}" ` +
    `height="${((h - 30) * n / top).toFixed(1)}" fill="#6b8fce"><title>${fmt(smin + (smax - smin) * k / BINS)} to ${fmt(smin + (smax - smin) * (k + 1) / BINS)}: ${n}</title></rect>`).join("");
  return `<svg id="histogram" viewBox="0 0 ${w} ${h}" width="100%"><g>${bars}</g>` +
    `<text x="0" y="${h - 4}" font-size="11">${fmt(smin)}</text><text x="${w}" y="${h - 4}" font-size="11" text-anchor="end">${fmt(smax)}</text></svg>`;
}

function renderHome(missing) {
  const rows = (S.order === "random" ? randomOrder() : byScore).filter(keepTriple);
  const perRelation = new Array(R.length).fill(0);
  const newTails = new Set(), heads = new Set();
  let inSeed = 0, newTailTriples = 0;
  for (const t of rows) {
    perRelation[t.r]++; heads.add(t.h);
    if (t.seed) inSeed++;
    if (!E[t.t].seed) { newTails.add(t.t); newTailTriples++; }
  }
  let accepted = 0, rejected = 0;
  for (const d of decisions.values()) d.verdict === "accept" ? accepted++ : rejected++;
  const top = Math.max(1, ...perRelation);
  const bars = R.map((name, r) => ({ name, r, n: perRelation[r] })).filter(x => x.n > 0 || relationShown(x.r)).sort((a, b) => b.n - a.n)
    .map(x => `<div class="bar" data-relation="${esc(x.name)}" title="show only ${esc(x.name)}"><span>${relationLabel(x.r)}</span>` +
      `<span><span class="fill" style="width:${(100 * x.n / top).toFixed(1)}%;background:${colour(x.r)}"></span></span><span class="num">${x.n}</span></div>`).join("");
  $("main").innerHTML = (missing ? `<section class="panel" id="missing"><p>No entity <code>${esc(missing)}</code> in this graph.</p></section>` : "") +
    `<section class="panel" id="summary"><h2>Summary</h2><div class="numbers">` +
    `<div><b>${rows.length}</b>triples${rows.length < T.length ? " of " + T.length : ""}</div>` +
    `<div><b>${heads.size}</b>heads</div>` +
    `<div><b>${inSeed}</b>held by the seed graph</div>` +
    `<div><b>${rows.length - inSeed}</b>new to it</div>` +
    `<div><b>${newTails.size}</b>tails that are new entities (${newTailTriples} triples)</div>` +
    `<div><b>${accepted + rejected ? fmt(accepted / (accepted + rejected)) : "–"}</b>reviewed precision (${accepted} ✓ / ${rejected} ✗)</div></div>` +
    `<div class="charts"><div><h2>Triples per relation</h2>${bars || '<p class="muted">none</p>'}</div>` +
    `<div><h2>Scores (${DEC.length && DEC.every(d => d.startsWith("rule:")) ? "the rule's measured precision" : DEC.length && DEC.every(d => d === "calibrated") ? "the probability that the triple holds" : "mean log-probability per slot"})</h2>${histogramSvg(rows)}</div></div>` +
    `<p class="muted">${esc(D.kg)}${D.dataset ? " · seed graph " + esc(D.dataset) : ""} · made ${esc(D.created)}</p></section>` +
    `<section class="panel"><h2>Triples, ${S.order === "random" ? "in a fixed random order (a review sample)" : "best first"}</h2><div id="all-triples"></div></section>`;
  tripleTable($("all-triples"), rows, "No triples pass the filters.");
  $("main").querySelectorAll(".bar").forEach(b => b.addEventListener("click", () =>
    refine({ r: new Set([R.indexOf(b.dataset.relation)]) })));
}

function syncControls() {
  $("min-score").value = S.min === null ? "" : S.min;
  $("kind").value = S.kind;
  $("facts").checked = S.facts;
  $("order").value = S.order;
  $("relation-menu").querySelectorAll("input").forEach(box => { box.checked = relationShown(+box.value); });
  $("relations-summary").textContent = "Relations: " + (!S.r || S.r.size === R.length ? "all" : S.r.size === 0 ? "none"
    : S.r.size === 1 ? R[[...S.r][0]] : S.r.size + " of " + R.length);
}

function render() {
  syncControls();
  const e = S.e && byId.get(S.e);
  if (e) renderEntity(e);
  else renderHome(S.e);
  document.title = (e ? e.name + " — " : "") + D.title;
}

// ---- search ----
let matches = [], active = 0;
function search(q) {
  q = fold(q.trim());
  if (!q) return [];
  const found = [];
  for (const e of E) {
    let rank = -1, via = null;
    e.folded.forEach((s, k) => { // the name, then the aliases (shown as written)
      const r = s === q ? 0 : s.startsWith(q) ? 1 : s.includes(" " + q) ? 2 : s.includes(q) ? 3 : -1;
      if (r >= 0 && (rank < 0 || r < rank)) { rank = r; via = k > 0 ? e.aliases[k - 1] : null; }
    });
    if (fold(e.id) === q) { rank = 0; via = null; }
    if (rank >= 0) found.push({ e, rank, via });
  }
  const degree = e => touching[e.i].length + factsOf[e.i].length;
  found.sort((a, b) => a.rank - b.rank || degree(b.e) - degree(a.e) || a.e.name.localeCompare(b.e.name));
  return found.slice(0, 15);
}
function showSuggestions() {
  $("suggestions").innerHTML = matches.map((m, k) => `<li role="option" data-id="${esc(m.e.id)}" class="${k === active ? "active" : ""}">` +
    `${esc(m.e.name)} <small>${esc(m.e.id)}${m.via ? " · alias “" + esc(m.via) + "”" : ""} · ${touching[m.e.i].length} triples</small></li>`).join("");
}
function choose(m) {
  matches = []; showSuggestions();
  $("search").value = "";
  go({ e: m.e.id });
}
$("search").addEventListener("input", ev => { matches = search(ev.target.value); active = 0; showSuggestions(); });
$("search").addEventListener("keydown", ev => {
  if (ev.key === "ArrowDown" && matches.length) { active = (active + 1) % matches.length; showSuggestions(); ev.preventDefault(); }
  else if (ev.key === "ArrowUp" && matches.length) { active = (active + matches.length - 1) % matches.length; showSuggestions(); ev.preventDefault(); }
  else if (ev.key === "Enter" && matches.length) choose(matches[active]);
  else if (ev.key === "Escape") { matches = []; showSuggestions(); }
});
$("suggestions").addEventListener("mousedown", ev => {
  const li = ev.target.closest("li");
  if (li) { ev.preventDefault(); choose(matches.find(m => m.e.id === li.dataset.id)); }
});
document.addEventListener("click", ev => { if (!ev.target.closest(".search")) { matches = []; showSuggestions(); } });

// ---- filters ----
$("relation-menu").innerHTML = R.map((name, r) => `<label><input type="checkbox" value="${r}" checked> ${relationLabel(r)}</label>`).join("") +
  '<div class="row"><button type="button" id="relations-all">all</button> <button type="button" id="relations-none">none</button></div>';
$("relation-menu").addEventListener("change", () => {
  const chosen = new Set([...$("relation-menu").querySelectorAll("input:checked")].map(b => +b.value));
  refine({ r: chosen.size === R.length ? null : chosen });
});
$("relations-all").onclick = () => refine({ r: null });
$("relations-none").onclick = () => refine({ r: new Set() });
$("min-score").addEventListener("change", ev => refine({ min: ev.target.value === "" || !isFinite(+ev.target.value) ? null : +ev.target.value }));
$("kind").addEventListener("change", ev => refine({ kind: ev.target.value }));
$("facts").addEventListener("change", ev => refine({ facts: ev.target.checked }));
$("order").addEventListener("change", ev => refine({ order: ev.target.value }));
$("home-link").addEventListener("click", ev => { ev.preventDefault(); go({ e: null }); });

// ---- the review dialog ----
let downloadUrl = null;
function fillReview() {
  const text = reviewJsonl();
  $("review-jsonl").value = text;
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
  $("review-download").href = downloadUrl;
}
$("review-open").onclick = () => { fillReview(); $("review-message").textContent = ""; $("review-dialog").showModal(); };
$("review-close").onclick = () => $("review-dialog").close();
$("review-clear").onclick = () => {
  if (!decisions.size || confirm(`Clear all ${decisions.size} decisions?`)) { decisions.clear(); saveDecisions(); fillReview(); render(); }
};
$("review-import").addEventListener("change", ev => {
  const file = ev.target.files[0];
  if (!file) return;
  file.text().then(text => { $("review-message").textContent = importReview(text); fillReview(); render(); });
});

window.addEventListener("hashchange", () => { readState(); render(); window.scrollTo(0, 0); });
readState();
saveDecisions();
render();
document.documentElement.dataset.readyMs = (performance.now() - started).toFixed(1);
})();
