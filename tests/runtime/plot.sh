#!/bin/sh
# --plot end to end: the SVG of a run, of a tune and of the database's history, and
# one written with hostile labels (test_plot), must each be well-formed XML with
# their text intact; then headless Chromium renders them and each PNG must have the
# SVG's size and not be blank.  Without chromium the rendering part is skipped
# (status 77 when it is all that is left); scripts/setup.sh installs it.
set -eu
perfc=$1 test_plot=$2 root=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }
g="$perfc $root/stdlib/gemm.pdl --no-schedule -D M=64 -D N=48 -D K=32 --db $dir/t.db --seed 2 --quiet"
$g --run --plot "$dir/run.svg" > /dev/null
$g --autotune --budget 4 --plot "$dir/tune.svg" > /dev/null
"$perfc" tune --show --db "$dir/t.db" --plot "$dir/hist.svg" > /dev/null
"$test_plot" "$dir/nasty.svg"
# an unwritable file is an error with status 1
if $g --run --plot /nonexistent-dir/x.svg > /dev/null 2> "$dir/bad.err"; then fail "unwritable --plot succeeded"; fi
grep -q "cannot write /nonexistent-dir/x.svg" "$dir/bad.err" || fail "no clear error: $(cat "$dir/bad.err")"

python3 - "$dir" <<'PY' || fail "XML check"
import sys, xml.etree.ElementTree as ET
d = sys.argv[1]
ns = "{http://www.w3.org/2000/svg}"
def texts(f):
    root = ET.parse(f"{d}/{f}").getroot()
    assert root.tag == ns + "svg", root.tag
    return root, ["".join(t.itertext()) for t in root.iter(ns + "text")]
root, t = texts("run.svg")
assert any(x == "gemm" for x in t), t
assert any("GFLOP/s" in x for x in t)
assert root.iter(ns + "polyline"), "no roof"
root, t = texts("tune.svg")
assert any("the search: 4 measured" in x for x in t), t
root, t = texts("hist.svg")
assert any("gemm M=64 N=48 K=32" in x for x in t), t
root, t = texts("nasty.svg")
assert any(x == "k<script>alert(1)</script>&amp;\"']" for x in t), t   # escaped, control characters dropped
assert not list(root.iter(ns + "script")), "markup from a label became an element"
print("xml ok")
PY

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then echo "chromium absent: rendering not checked"; exit 77; fi
for f in run tune hist nasty; do
  size=$(python3 -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print(r.get('width')+','+r.get('height'))" "$dir/$f.svg")
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
    --screenshot="$dir/$f.png" "file://$dir/$f.svg" > "$dir/$f.chromium.log" 2>&1 || true
  [ -s "$dir/$f.png" ] || fail "chromium made no PNG of $f.svg: $(tail -3 "$dir/$f.chromium.log")"
  python3 - "$dir/$f.png" "$size" <<'PY' || fail "$f.png"
import sys, struct, zlib
png, size = open(sys.argv[1], "rb").read(), sys.argv[2]
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h, depth, ctype = struct.unpack(">IIBB", png[16:26])
assert f"{w},{h}" == size, f"PNG is {w}x{h}, the SVG {size}"
# decode the image rows: count distinct pixels in a sample (a blank page has one)
data, pos = b"", 8
while pos < len(png):
    n, kind = struct.unpack(">I4s", png[pos:pos + 8])
    if kind == b"IDAT":
        data += png[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(data)
bpp = {2: 3, 6: 4, 0: 1, 4: 2}[ctype] * depth // 8
stride = w * bpp
assert len(raw) == h * (stride + 1), "truncated image data"
# A blank page is one scanline repeated (whatever the filters, equal rows encode
# alike); a picture has many different ones and many non-white bytes.
rows = {raw[y * (stride + 1):(y + 1) * (stride + 1)] for y in range(h)}
ink = sum(1 for i in range(0, len(raw), 97) if raw[i] not in (0, 255))
assert len(rows) > 50 and ink > 100, f"blank: {len(rows)} distinct rows, {ink} ink samples"
print(sys.argv[1].rsplit("/", 1)[1], f"{w}x{h}", len(rows), "distinct rows, ok")
PY
done
echo ok
