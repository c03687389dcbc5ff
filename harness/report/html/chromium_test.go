package html_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/report/html"
)

// chromium runs headless Chromium on the report with args, offline, and
// returns its standard output.
func chromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir(), "--window-size=1400,1000"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

// keep copies a screenshot (or the page) to $CONFORM_HTMLREPORT_SHOTS, for a person to look at.
func keep(t *testing.T, png string) {
	if dir := os.Getenv("CONFORM_HTMLREPORT_SHOTS"); dir != "" {
		b, err := os.ReadFile(png)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(png)), b, 0o644)
		}
		if err != nil {
			t.Log(err)
		}
	}
}

// The verdict chip colours of report.css, which nothing else on the page uses.
var chipColours = map[string][3]uint8{
	"pass":           {0xc3, 0xe6, 0xcb},
	"fail":           {0xf4, 0xa6, 0xa6},
	"not-applicable": {0xdc, 0xdf, 0xe3},
	"error":          {0xff, 0xd0, 0x8a},
}

// countColours counts, per verdict, the pixels of its chip colour inside a
// solid area (the pixel and its four neighbours all of that colour), so the
// anti-aliased edges of grey text do not count as n/a chips.
func countColours(img image.Image) (map[string]int, int) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	class := make([]string, w*h)
	distinct := map[[3]uint8]bool{}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			c := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
			if len(distinct) < 1000 {
				distinct[c] = true
			}
			for v, want := range chipColours {
				if near(c, want) {
					class[y*w+x] = v
				}
			}
		}
	}
	counts := map[string]int{}
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			v := class[y*w+x]
			if v != "" && class[y*w+x-1] == v && class[y*w+x+1] == v && class[(y-1)*w+x] == v && class[(y+1)*w+x] == v {
				counts[v]++
			}
		}
	}
	return counts, len(distinct)
}

func near(a, b [3]uint8) bool {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < -3 || d > 3 {
			return false
		}
	}
	return true
}

func screenshot(t *testing.T, bin, url, name string) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), name)
	chromium(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	keep(t, shot)
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 1000 {
		t.Errorf("%s is %v, want 1400x1000", name, b)
	}
	return img
}

// svgs returns the timeline SVG elements of the dumped DOM, by
// "<run> <golden|observed>".
func svgs(dom string) map[string]string {
	out := map[string]string{}
	re := regexp.MustCompile(`<svg class="timeline" data-role="(\w+)" data-run="(run-\d+)"`)
	for _, m := range re.FindAllStringSubmatchIndex(dom, -1) {
		end := strings.Index(dom[m[0]:], "</svg>")
		if end < 0 {
			continue
		}
		out[dom[m[4]:m[5]]+" "+dom[m[2]:m[3]]] = dom[m[0] : m[0]+end]
	}
	return out
}

func lanes(svg string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<g class="lane [^"]*" data-lane="([^"]*)"`).FindAllStringSubmatch(svg, -1) {
		out = append(out, m[1])
	}
	return out
}

func count(svg, class string) int { return strings.Count(svg, `class="`+class+`"`) }

// TestChromium_RendersMatrixAndTimelines verifies, in headless Chromium and
// offline, that a report built from real simulated and golden traces draws
// the verdict matrix (each cell's verdict in its colour, in the expected
// proportions) and, per run, golden and observed timelines with lanes per
// address, balancer, timers and RPC and the marks of their events.
func TestChromium_RendersMatrixAndTimelines(t *testing.T) {
	bin := findChromium(t)
	s := buildSample(t)
	dir := t.TempDir()
	if err := html.Write(dir, s.Report); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, html.FileName)
	keep(t, filepath.Join(dir, html.FileName))

	dom := string(chromium(t, bin, url, "--dump-dom"))
	if !strings.Contains(dom, `data-rendered="true"`) {
		t.Fatalf("the page's script did not finish; DOM:\n%.2000s", dom)
	}
	if strings.Contains(dom, "<script>alert(1)") {
		t.Error("hostile evidence became markup")
	}

	// The matrix: one chip per (requirement, implementation) with its verdict.
	chip := regexp.MustCompile(`class="chip v-([a-z-]+)" data-verdict="[a-z-]+" data-req="([A-Z0-9-]+)" data-impl="([^"]+)"`)
	got := map[string]map[string]string{}
	want := map[string]int{}
	for _, m := range chip.FindAllStringSubmatch(dom, -1) {
		if got[m[3]] == nil {
			got[m[3]] = map[string]string{}
		}
		got[m[3]][m[2]] = m[1]
	}
	for impl, reqs := range s.Cells {
		for id, v := range reqs {
			if got[impl][id] != v {
				t.Errorf("cell %s × %s shows %q, want %q", id, impl, got[impl][id], v)
			}
			want[v]++
		}
	}

	// The timelines.
	tls := svgs(dom)
	ref := s.RunOf["reference he-dropped-ipv6 sim"]
	bad := s.RunOf[implNoDelay+" he-dropped-ipv6 sim"]
	lab := s.RunOf["reference he-dropped-ipv6 lab"]
	v6, v4 := "addr:[fd00:c0f::b:1]:50051", "addr:198.19.0.1:50051"
	for _, key := range []string{ref + " golden", ref + " observed", bad + " golden", bad + " observed", lab + " observed"} {
		svg, ok := tls[key]
		if !ok {
			t.Errorf("no timeline %s; have %d timelines", key, len(tls))
			continue
		}
		ls := strings.Join(lanes(svg), " | ")
		for _, l := range []string{v6, v4, "timers:", "rpc:r1", "balancer:"} {
			if !strings.Contains(" | "+ls+" | ", " | "+l+" | ") {
				t.Errorf("timeline %s: no lane %q in %s", key, l, ls)
			}
		}
		if n := count(svg, "mark syn"); n != 2 {
			t.Errorf("timeline %s: %d first-SYN marks, want 2 (one per address)", key, n)
		}
		if n := count(svg, "mark syn-ack"); n != 1 {
			t.Errorf("timeline %s: %d SYN-ACK marks, want 1 (IPv4)", key, n)
		}
		if n := count(svg, "mark rpc-result ok"); n != 1 {
			t.Errorf("timeline %s: %d answered-RPC marks, want 1", key, n)
		}
		if !strings.Contains(svg, `data-tip="+`) {
			t.Errorf("timeline %s: marks carry no event text to show on hover", key)
		}
	}
	// golden and observed share their lanes
	if a, b := lanes(tls[bad+" golden"]), lanes(tls[bad+" observed"]); strings.Join(a, "|") != strings.Join(b, "|") {
		t.Errorf("golden lanes %v, observed lanes %v: want the same", a, b)
	}
	// dropped IPv6, golden and observed (a 100 ms delay): unanswered, the timer fired, no RST.
	for _, k := range []string{bad + " golden", bad + " observed"} {
		if g := tls[k]; count(g, "mark unanswered") != 1 || count(g, "mark timer-fire") != 1 || count(g, "mark rst") != 0 || count(g, "span fault fault-drop") != 1 {
			t.Errorf("%s: want one unanswered attempt, a fired timer, no RST and a drop fault span", k)
		}
	}
	hung := tls[s.RunOf["reference all-dropped sim"]+" observed"]
	if count(hung, "mark syn retransmit") < 1 || count(hung, "mark rpc-result failed") != 1 || count(hung, "mark unanswered") != 1 {
		t.Errorf("all-dropped: want retransmitted SYNs in one unanswered attempt and a failed RPC")
	}
	if !strings.Contains(dom, `class="tl-none" data-role="golden"`) {
		t.Errorf("a run without a golden trace does not say so")
	}
	if !strings.Contains(tls[lab+" observed"], `data-lane="channel"`) {
		t.Errorf("lab timeline: no channel lane (the driver's channel states)")
	}
	if o := tls[lab+" observed"]; !strings.Contains(o, `data-lane="stalls"`) || count(o, "span stall") != 1 {
		t.Errorf("lab timeline: want a stalls lane with the one stall the lab's watch recorded")
	}

	// The failing run opens zoomed on the event its failure cites (the
	// IPv4 SYN that came 100 ms after the IPv6 one, not 250 ms), marked in
	// the observed timeline and not in the golden one.
	if o := tls[bad+" observed"]; !strings.Contains(o, `class="cite-line"`) || !regexp.MustCompile(`class="mark syn" [^>]*data-cited="true"`).MatchString(o) {
		t.Errorf("failing run: the cited SYN is not marked in the observed timeline")
	}
	if g := tls[bad+" golden"]; strings.Contains(g, "data-cited") || strings.Contains(g, "cite-line") {
		t.Errorf("failing run: the golden timeline marks an event as cited")
	}
	shown := regexp.MustCompile(`id="sec-` + bad + `"[\s\S]*?showing ([0-9.]+)–([0-9.]+) ms`).FindStringSubmatch(dom)
	if shown == nil {
		t.Errorf("failing run: no time window in its tools line")
	} else if from, _ := strconv.ParseFloat(shown[1], 64); from > 100 {
		t.Errorf("failing run opens showing %s–%s ms: the cited SYN at 100 ms is outside", shown[1], shown[2])
	} else if to, _ := strconv.ParseFloat(shown[2], 64); to <= 100 || to-from > 150 {
		t.Errorf("failing run opens showing %s–%s ms, want a window zoomed on the SYN at 100 ms (the run is ~250 ms)", shown[1], shown[2])
	}
	if strings.Contains(tls[ref+" observed"], "data-cited") {
		t.Errorf("a passing run marks an event as cited")
	}

	// The screenshot: the matrix, its chips in their colours.
	img := screenshot(t, bin, url, "matrix.png")
	counts, distinct := countColours(img)
	if distinct < 20 {
		t.Fatalf("screenshot has %d distinct colours: blank?", distinct)
	}
	// Every verdict appears once more in the legend, in a chip of the same size.
	unit := float64(counts["pass"]) / float64(want["pass"]+1)
	for v := range chipColours {
		n := want[v] + 1
		ratio := float64(counts[v]) / (unit * float64(n))
		t.Logf("%s: %d pixels for %d chips (%.2f of a pass chip's each)", v, counts[v], n, ratio)
		if counts[v] == 0 || ratio < 0.75 || ratio > 1.25 {
			t.Errorf("%s chips: %d pixels, want about %.0f (%d chips)", v, counts[v], unit*float64(n), n)
		}
	}

	// The failing run's timelines, reached by the link a cell gives.
	shot := screenshot(t, bin, url+"#"+bad, "timeline.png")
	if _, d := countColours(shot); d < 20 {
		t.Errorf("timeline screenshot has %d distinct colours: blank?", d)
	}
	// The state spans were drawn: CONNECTING and READY (balancer,
	// subchannels), in report.js's colours; TRANSIENT_FAILURE in the
	// reference's he-refused-ipv6 (the refused IPv6 subchannel).
	refusedShot := screenshot(t, bin, url+"#"+s.RunOf["reference he-refused-ipv6 sim"], "timeline-refused.png")
	for state, c := range map[string][3]uint8{"CONNECTING": {0xff, 0xf0, 0xa6}, "READY": {0x8f, 0xd1, 0x9e}, "TRANSIENT_FAILURE": {0xec, 0x7f, 0x7f}} {
		shot := shot
		if state == "TRANSIENT_FAILURE" {
			shot = refusedShot
		}
		n := 0
		b := shot.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, _ := shot.At(x, y).RGBA()
				if near([3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}, c) {
					n++
				}
			}
		}
		if n < 500 {
			t.Errorf("timeline screenshot: %d pixels of %s's colour, want a visible span", n, state)
		}
	}
}
