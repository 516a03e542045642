#!/bin/sh
# gene_ontology.sh — exports the Gene Ontology shipped by Debian's r-bioc-go.db (GO.sqlite,
# release 2022-07-01) into graphmert's dataset folder: entities.tsv, triples.tsv, corpus.jsonl,
# relations.tsv and README.md, without installing R or the package itself; and GO's string rules
# (gene_ontology_patterns.tsv, beside this script) as patterns.tsv.
#   sh scripts/data/gene_ontology.sh [OUT_DIR] [--force]     (OUT_DIR: experiments/data/gene_ontology)
# Idempotent: a folder holding a complete export (the five files and a .complete marker, written
# last) is left alone unless --force. Files are written to temporary names in OUT_DIR and renamed
# at the end, so a killed run never leaves a half export that looks complete.
# The export uses Debian's sqlite3 command-line tool rather than a Lua binding: an export run once
# needs no binding, and the CLI is one small Debian package (its json_object() escapes JSON right).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT="" FORCE=0 CMD="sh scripts/data/gene_ontology.sh${*:+ $*}"
die() { echo "gene_ontology: $*" >&2; exit 1; }
for a in "$@"; do
  case $a in
    --force) FORCE=1 ;;
    -h|--help) sed -n 2,5p "$0"; exit 0 ;;
    -*) die "unknown option $a (usage: sh scripts/data/gene_ontology.sh [OUT_DIR] [--force])" ;;
    *) [ -z "$OUT" ] || die "more than one OUT_DIR given"; OUT=$a ;;
  esac
done
OUT=${OUT:-$ROOT/experiments/data/gene_ontology}
FILES="entities.tsv triples.tsv corpus.jsonl relations.tsv patterns.tsv"

complete=1
for f in $FILES .complete; do [ -f "$OUT/$f" ] || complete=0; done
if [ $complete = 1 ] && [ $FORCE = 0 ]; then
  echo "gene_ontology: $OUT already holds a complete export (--force re-exports)"; exit 0
fi

start=$(date +%s)
mkdir -p "$OUT" 2>/dev/null && [ -d "$OUT" ] && [ -w "$OUT" ] || die "cannot create or write output folder $OUT"
TMP=$(mktemp -d) || die "cannot create a temporary folder"
trap 'rm -rf "$TMP"; rm -f "$OUT"/.*.tmp.$$' EXIT
trap 'exit 1' HUP INT TERM
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

if ! command -v sqlite3 >/dev/null; then
  echo "gene_ontology: installing sqlite3"
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends sqlite3; } >"$TMP/apt.log" 2>&1 ||
    die "apt-get install sqlite3 failed: $(grep -m1 '^E:' "$TMP/apt.log")"
fi

# apt-get download needs no root; its log is shown only on failure (as root it warns that the
# download runs unsandboxed, which is harmless). apt-get update runs only if the package is unknown.
download() { (cd "$TMP" && apt-get download -qq r-bioc-go.db) >"$TMP/apt.log" 2>&1; }
if ! download; then
  grep -qE "Unable to locate|Can't select|no installation candidate" "$TMP/apt.log" ||
    die "apt-get download r-bioc-go.db failed: $(grep -m1 '^E:' "$TMP/apt.log")"
  $SUDO apt-get update -qq >"$TMP/apt.log" 2>&1 || die "apt-get update failed: $(grep -m1 '^E:' "$TMP/apt.log")"
  download || die "apt-get download r-bioc-go.db failed: $(grep -m1 '^E:' "$TMP/apt.log")"
fi
DEB=$(ls "$TMP"/r-bioc-go.db_*.deb) && dpkg-deb -x "$DEB" "$TMP/x" || die "dpkg-deb -x failed on the r-bioc-go.db package"
VERSION=$(dpkg-deb -f "$DEB" Version)
DB=$(find "$TMP/x" -name GO.sqlite | head -n 1)
[ -n "$DB" ] || die "no GO.sqlite in r-bioc-go.db $VERSION"

# Schema notes (GO.db 3.16): obsolete terms live in go_obsolete, not go_term; go_term also holds
# the root "all" (ontology "universal"), which is no GO term and is left out with its 3 is_a edges
# from the three namespace roots. go_synonym mixes labels with secondary ids (synonym = "GO:...").
# Relations are spelled "isa", "part of", "positively regulates", ...; they are written as GO's
# OBO relation ids (is_a, part_of, positively_regulates, ...). lower() is ASCII-only in SQLite;
# GO 2022-07-01 labels are all ASCII. definition is NULL for every go_term row past _id 38400
# (8418 GO terms, GO:0120158 on), apparently a GO.db build fault; those terms get no passage.
T=".tmp.$$"
sqlite3 -bail -readonly "$DB" >"$TMP/counts" 2>"$TMP/sqlite.log" <<EOF || die "sqlite3 export failed: $(head -n 1 "$TMP/sqlite.log")"
.mode list
.separator "\t" "\n"
.headers off
CREATE TEMP TABLE ent AS
  SELECT t._id, t.go_id AS id, replace(replace(replace(t.term, char(9), ' '), char(10), ' '), char(13), ' ') AS name,
         o.term_type AS type, trim(t.definition) AS def
  FROM go_term t JOIN go_ontology o USING (ontology)
  WHERE o.ontology IN ('BP', 'MF', 'CC') AND t.go_id NOT IN (SELECT go_id FROM go_obsolete);
CREATE INDEX temp.ent_id ON ent (_id);
-- Synonyms of kept terms that are labels, not secondary ids; |, TAB, CR and LF become spaces.
CREATE TEMP TABLE syn0 AS
  SELECT s._id, s.synonym AS raw, e.name,
         trim(replace(replace(replace(replace(s.synonym, '|', ' '), char(9), ' '), char(10), ' '), char(13), ' ')) AS alias
  FROM go_synonym s JOIN ent e USING (_id) WHERE s.synonym NOT GLOB 'GO:[0-9]*';
-- One spelling per case-insensitive duplicate (the first in binary order), none equal to the name.
CREATE TEMP TABLE syn AS
  SELECT _id, min(alias) AS alias FROM syn0 WHERE alias <> '' AND lower(alias) <> lower(name) GROUP BY _id, lower(alias);
CREATE TEMP TABLE aliases AS
  SELECT _id, group_concat(alias, '|') AS list FROM (SELECT * FROM syn ORDER BY _id, lower(alias), alias) GROUP BY _id;
CREATE TEMP TABLE rawedge AS
  SELECT * FROM go_bp_parents UNION SELECT * FROM go_mf_parents UNION SELECT * FROM go_cc_parents;
CREATE TEMP TABLE edge AS
  SELECT c.id AS head, CASE p.relationship_type WHEN 'isa' THEN 'is_a' ELSE replace(p.relationship_type, ' ', '_') END AS relation,
         t.id AS tail, c.type AS head_type, t.type AS tail_type
  FROM rawedge p JOIN ent c ON c._id = p._id JOIN ent t ON t._id = p._parent_id;

.output "$OUT/.entities.tsv$T"
SELECT 'id', 'name', 'type', 'aliases';
SELECT e.id, e.name, e.type, coalesce(a.list, '') FROM ent e LEFT JOIN aliases a USING (_id) ORDER BY e.id;
.output "$OUT/.triples.tsv$T"
SELECT 'head', 'relation', 'tail';
SELECT head, relation, tail FROM edge ORDER BY head, relation, tail;
.output "$OUT/.corpus.jsonl$T"
SELECT json_object('id', id, 'entity', id, 'text', name || ': ' || def) FROM ent WHERE def <> '' ORDER BY id;
.output "$OUT/.relations.tsv$T"
SELECT 'relation', 'head_types', 'tail_types', 'properties';
SELECT r.relation, r.head_type,
       (SELECT group_concat(tail_type, ',') FROM (SELECT DISTINCT tail_type FROM edge e
          WHERE e.relation = r.relation AND e.head_type = r.head_type ORDER BY 1)),
       CASE r.relation WHEN 'is_a' THEN 'subsumption' ELSE '' END
  FROM (SELECT DISTINCT relation, head_type FROM edge) r ORDER BY 1, 2;
.output stdout
.separator "=" "\n"
SELECT 'terms', count(*) FROM ent;
SELECT 'namespaces', '"' || group_concat(n, ', ') || '"' FROM (SELECT type || ' ' || count(*) AS n FROM ent GROUP BY type ORDER BY type);
SELECT 'synonyms', count(*) FROM go_synonym s JOIN ent USING (_id);
SELECT 'secondary_ids', count(*) FROM go_synonym s JOIN ent USING (_id) WHERE s.synonym GLOB 'GO:[0-9]*';
SELECT 'cleaned', count(*) FROM syn0 WHERE alias <> raw;
SELECT 'same_as_name', count(*) FROM syn0 WHERE lower(alias) = lower(name);
SELECT 'kept', count(*) FROM syn;
SELECT 'duplicates', (SELECT count(*) FROM syn0 WHERE alias <> '' AND lower(alias) <> lower(name)) - count(*) FROM syn;
SELECT 'edges', count(*) FROM rawedge;
SELECT 'dropped_edges', count(*) - (SELECT count(*) FROM edge) FROM rawedge;
SELECT 'triples', count(*) FROM edge;
SELECT 'per_relation', '"' || group_concat(n, ', ') || '"' FROM (SELECT relation || ' ' || count(*) AS n FROM edge GROUP BY relation ORDER BY relation);
SELECT 'passages', count(*) FROM ent WHERE def <> '';
SELECT 'no_definition', count(*) FROM ent WHERE def IS NULL OR def = '';
SELECT 'release', '"' || coalesce((SELECT value FROM metadata WHERE name = 'GOSOURCEDATE'), 'unknown') || '"';
EOF
# counts holds name=value lines with integer or double-quoted [a-z_ 0-9,-] values only.
. "$TMP/counts"

cp "$ROOT/scripts/data/gene_ontology_patterns.tsv" "$OUT/.patterns.tsv$T" || die "cannot write $OUT/patterns.tsv"

cat >"$OUT/.README.md$T" <<EOF || die "cannot write $OUT/README.md"
# Gene Ontology (release $release)

Exported from the GO.sqlite file of Debian's package r-bioc-go.db, version $VERSION (Bioconductor GO.db; GO release $release, go-basic.obo), by \`$CMD\` run from the repository root. Obsolete terms and GO.db's "all" root are left out; relation names are GO's OBO ids (GO.sqlite spells them isa, part of, ...).

entities.tsv: $terms terms ($namespaces), with $kept synonyms kept as aliases out of $synonyms ($secondary_ids secondary GO ids, $same_as_name equal to the name and $duplicates case-insensitive duplicates dropped; $cleaned cleaned of |, TAB or newline). triples.tsv: $triples child→parent edges ($per_relation; $dropped_edges dropped for an end outside entities.tsv). corpus.jsonl: $passages passages "name: definition" ($no_definition terms have no definition in GO.sqlite). patterns.tsv: string rules read off GO's names (regulation of X, catabolic and biosynthetic processes, involved in), for \`graphmert extract --extractor rules\`.
EOF

# Rename into place; the marker goes first (removed) and last (written), so a folder without it is
# never taken as complete.
rm -f "$OUT/.complete" || die "cannot remove $OUT/.complete"
for f in $FILES README.md; do mv -f "$OUT/.$f$T" "$OUT/$f" || die "cannot rename $OUT/.$f$T"; done
echo "r-bioc-go.db $VERSION, GO $release" >"$OUT/.complete$T" && mv -f "$OUT/.complete$T" "$OUT/.complete" ||
  die "cannot write $OUT/.complete"

echo "gene_ontology: r-bioc-go.db $VERSION (GO $release) → $OUT in $(( $(date +%s) - start ))s"
echo "  terms $terms ($namespaces)"
echo "  synonyms $synonyms: kept $kept; dropped $secondary_ids secondary ids, $same_as_name equal to the name, $duplicates duplicates; cleaned $cleaned"
echo "  triples $triples ($per_relation); dropped $dropped_edges of $edges edges"
echo "  passages $passages ($no_definition terms without a definition)"
