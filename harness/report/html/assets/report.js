// conform HTML report: draws the verdict matrix and, per run, the golden and
// observed timelines from the JSON in #report-data. Plain JS, inline SVG,
// nothing fetched.
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("report-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var VERDICTS = ["pass", "fail", "inconclusive", "not-applicable", "error"];
  var VLABEL = { "pass": "\u2713 pass", "fail": "\u2717 fail", "inconclusive": "? inconclusive", "not-applicable": "\u2013 n/a", "error": "! error", "none": "\u00b7 not run" };
  // A cell shows its most telling verdict: a failure outranks an error,
  // which outranks an inconclusive, which outranks a pass, which outranks
  // not-applicable.
  var RANK = { "fail": 5, "error": 4, "inconclusive": 3, "pass": 2, "not-applicable": 1 };
  // vlabel is a result's verdict as shown: a fail with its kind.
  function vlabel(x) { return VLABEL[x.verdict] + (x.verdict === "fail" && x.kind ? " (" + x.kind + ")" : ""); }
  // rowName is a result's requirement and, when it has one, its check.
  function rowName(x) { return x.requirement + (x.check ? " \u00b7 " + x.check : ""); }
  var STATE_COLOR = {
    "IDLE": "#eeeeee", "CONNECTING": "#fff0a6", "READY": "#8fd19e",
    "TRANSIENT_FAILURE": "#ec7f7f", "SHUTDOWN": "#9aa3ab"
  };
  var STATE_SHORT = { "CONNECTING": "CONN", "TRANSIENT_FAILURE": "TF", "SHUTDOWN": "SHUT" };

  // ---- small DOM helpers --------------------------------------------------
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, kids);
    return e;
  }
  function sv(tag, attrs, kids) {
    var e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, kids);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (var k in attrs) {
      if (attrs[k] === undefined || attrs[k] === null) continue;
      if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
  }
  function append(e, kids) {
    if (kids === undefined || kids === null) return;
    if (!Array.isArray(kids)) kids = [kids];
    kids.forEach(function (k) {
      if (k === null || k === undefined) return;
      e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    });
  }
  function ms(ns) { return ns / 1e6; }
  function fmtMs(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 100) return String(Math.round(v));
    if (a >= 1) return String(Math.round(v * 10) / 10);
    return String(Math.round(v * 1000) / 1000);
  }

  // ---- header ---------------------------------------------------------------
  var title = D.title || "conform report";
  var meta = [];
  if (D.generated) meta.push("generated " + D.generated.replace("T", " "));
  if (D.harness) meta.push("conform " + D.harness);
  meta.push(D.impls.length + " implementation" + (D.impls.length === 1 ? "" : "s"));
  meta.push(D.requirements.length + " requirement" + (D.requirements.length === 1 ? "" : "s"));
  meta.push(D.runs.length + " run" + (D.runs.length === 1 ? "" : "s"));
  document.getElementById("title").textContent = title;
  document.getElementById("meta").textContent = meta.join(" \u00b7 ");

  // ---- indexes ---------------------------------------------------------------
  function runKey(impl, spec, mode) { return impl + "\u0000" + spec + "\u0000" + mode; }
  var runByKey = {};
  D.runs.forEach(function (r) { runByKey[runKey(r.impl, r.spec, r.mode)] = r; });
  var cellResults = {}; // req \0 impl -> results
  var runResults = {};  // run id -> results
  D.results.forEach(function (x) {
    var k = x.requirement + "\u0000" + x.impl;
    (cellResults[k] = cellResults[k] || []).push(x);
    var r = runByKey[runKey(x.impl, x.spec, x.mode)];
    if (r) (runResults[r.id] = runResults[r.id] || []).push(x);
  });
  var reqByID = {};
  D.requirements.forEach(function (q) { reqByID[q.id] = q; });

  function cellVerdict(rs) {
    if (!rs || !rs.length) return "none";
    var best = rs[0].verdict;
    rs.forEach(function (x) { if (RANK[x.verdict] > RANK[best]) best = x.verdict; });
    return best;
  }
  function summary(rs) {
    var n = {};
    rs.forEach(function (x) { n[x.verdict] = (n[x.verdict] || 0) + 1; });
    return VERDICTS.filter(function (v) { return n[v]; }).map(function (v) { return n[v] + " " + VLABEL[v].replace(/^\S+ /, ""); }).join(", ") +
      " (of " + rs.length + " result" + (rs.length === 1 ? "" : "s") + "); click for the evidence";
  }
  function chipText(v, rs) {
    var t = VLABEL[v];
    if (rs && rs.length > 1) {
      var n = rs.filter(function (x) { return x.verdict === v; }).length;
      t += n === rs.length ? " \u00d7" + n : " " + n + "/" + rs.length;
    }
    return t;
  }

  // ---- legend -----------------------------------------------------------------
  var legend = document.getElementById("legend");
  VERDICTS.concat(["none"]).forEach(function (v) {
    legend.appendChild(el("span", { "class": "item" }, [
      el("span", { "class": "chip v-" + v, "aria-hidden": "true", text: VLABEL[v] })
    ]));
  });
  legend.appendChild(el("span", { text: "A cell with several results (checks, specs, modes) shows the worst: fail, error, inconclusive, pass, n/a." }));

  // ---- the matrix -------------------------------------------------------------
  var selectedChip = null;
  function buildMatrix() {
    var table = el("table", { "class": "matrix" });
    var head = el("tr", null, [el("th", { "class": "reqhead", text: "Requirement" })]);
    D.impls.forEach(function (im) { head.appendChild(el("th", { "class": "impl", scope: "col", text: im })); });
    table.appendChild(el("thead", null, head));
    var docs = [], byDoc = {};
    D.requirements.forEach(function (q) {
      if (!byDoc[q.doc]) { byDoc[q.doc] = []; docs.push(q.doc); }
      byDoc[q.doc].push(q);
    });
    var totals = D.impls.map(function () { return { "pass": 0, "fail": 0, "inconclusive": 0, "not-applicable": 0, "error": 0, "none": 0 }; });
    docs.forEach(function (doc) {
      var tb = el("tbody", { "data-doc": doc });
      tb.appendChild(el("tr", { "class": "doc" }, el("th", { colspan: String(D.impls.length + 1) },
        [doc || "(no document)", el("span", { "class": "hint", text: byDoc[doc].length + " requirement" + (byDoc[doc].length === 1 ? "" : "s") })])));
      byDoc[doc].forEach(function (q) {
        var tr = el("tr", { "data-req": q.id });
        tr.appendChild(el("td", { "class": "req" }, [
          el("code", { text: q.id }),
          el("div", { "class": "text", text: q.text }),
          q.section ? el("div", { "class": "section", text: q.section }) : null
        ]));
        D.impls.forEach(function (im, i) {
          var rs = cellResults[q.id + "\u0000" + im];
          var v = cellVerdict(rs);
          totals[i][v]++;
          var chip = el(v === "none" ? "span" : "button", {
            "class": "chip v-" + v, "data-verdict": v, "data-req": q.id, "data-impl": im,
            title: v === "none" ? "no result for " + q.id + " on " + im : summary(rs),
            text: chipText(v, rs)
          });
          if (v !== "none") chip.addEventListener("click", function () { showDetail(q, im, rs, chip); });
          tr.appendChild(el("td", { "class": "cell" }, chip));
        });
        tb.appendChild(tr);
      });
      table.appendChild(tb);
    });
    var foot = el("tr", null, [el("td", { "class": "totlabel", text: "Totals (requirements)" })]);
    totals.forEach(function (t, i) {
      var kids = [];
      VERDICTS.concat(["none"]).forEach(function (v) {
        if (!t[v] && v !== "pass" && v !== "fail") return;
        kids.push(el("div", null, [el("span", { "class": "n", text: String(t[v]) }), " " + VLABEL[v].replace(/^\S+ /, "")]));
      });
      foot.appendChild(el("td", { "class": "tot", "data-impl": D.impls[i] }, kids));
    });
    table.appendChild(el("tfoot", null, foot));
    document.getElementById("matrix").appendChild(table);
  }

  // runLink opens run r; for a result x that cites events, zoomed on them.
  function runLink(r, text, x) {
    var a = el("a", { href: "#" + r.id, text: text });
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      if (x && x.cites && x.cites.length) focusOn(r, x);
      goToRun(r.id, true);
    });
    return a;
  }

  // ---- a failure's cited events ----------------------------------------------
  // A fail's evidence cites events of the observed trace (x.cites, found by
  // conform from the evidence); its run opens zoomed on them, marked.
  function citedEvents(run, x) {
    var tr = D.traces[run.observed];
    if (!tr || !x || !x.cites) return [];
    return x.cites.map(function (i) { return tr.events[i]; }).filter(Boolean);
  }
  // citeDomain is the window around x's cited events: them, and a twentieth
  // of the run on each side (at least 5 ms), so what led to them shows too.
  function citeDomain(run, x, full) {
    var ts = citedEvents(run, x).map(function (e) { return e.t; });
    if (!ts.length) return null;
    var lo = Math.min.apply(null, ts), hi = Math.max.apply(null, ts);
    var pad = Math.max((hi - lo) * 0.5, (full[1] - full[0]) * 0.05, 5e6);
    return [Math.max(full[0], lo - pad), Math.min(full[1], hi + pad)];
  }
  // focusOn makes x the failure run's timelines show: zoomed on, and marking,
  // the events it cites.
  function focusOn(run, x) {
    run._focus = x;
    run._zoom = true;
    renderRun(run);
  }
  function isCited(e) { return CITED !== null && CITED.indexOf(e) >= 0; }
  var CITED = null; // the observed timeline being drawn: its cited events

  function showDetail(q, impl, rs, chip) {
    if (selectedChip) selectedChip.classList.remove("selected");
    selectedChip = chip;
    chip.classList.add("selected");
    var d = document.getElementById("detail");
    d.textContent = "";
    d.appendChild(el("h3", null, [el("code", { text: q.id }), " on ", impl]));
    d.appendChild(el("p", { "class": "reqtext" }, [q.text, q.section ? el("span", { "class": "hint", text: q.doc + ", " + q.section }) : null]));
    rs.slice().sort(function (a, b) { return RANK[b.verdict] - RANK[a.verdict]; }).forEach(function (x) {
      var r = runByKey[runKey(x.impl, x.spec, x.mode)];
      d.appendChild(el("div", { "class": "res" }, [
        el("span", { "class": "vtext v-" + x.verdict, text: VLABEL[x.verdict] }), " ",
        el("span", { "class": "mono", text: x.spec + " [" + x.mode + "]" }), " ",
        r ? runLink(r, x.cites && x.cites.length ? "timeline, at the event it cites \u25b8" : "timeline \u25b8", x) : el("span", { "class": "hint", text: "(no run recorded)" }),
        x.evidence ? el("pre", { "class": "evidence", text: x.evidence }) : null
      ]));
    });
  }

  // ---- timelines ----------------------------------------------------------------
  // Lanes are computed over both traces of a run, so golden and observed
  // have the same lanes in the same order and a lane empty in one of them
  // shows the difference.
  function laneOf(e, scAddr) {
    switch (e.kind) {
      case "syn": case "syn-ack": case "rst": case "accept": case "preface": case "rpc-served": case "conn-close":
      case "fault-set": case "fault-clear": case "health-set":
        return e.addr ? "addr:" + e.addr : "misc";
      case "channel-state": return "channel";
      case "stall": return "stalls";
      case "balancer-state": return "balancer:" + (e.policy || "");
      case "timer-start": case "timer-fire": case "timer-stop": return "timers:" + (e.policy || "");
      case "rpc-start": case "rpc-result": return e.rpc ? "rpc:" + e.rpc : "misc";
      case "pick": return e.rpc ? "rpc:" + e.rpc : "picks:" + (e.policy || "");
      case "subchannel-new": case "subchannel-connect": case "subchannel-addresses": case "subchannel-state":
      case "subchannel-health": case "subchannel-shutdown": {
        var a = scAddr[e.subchannel];
        return a ? "addr:" + a : "sc:" + (e.subchannel || "?");
      }
      default: return "misc";
    }
  }
  // scAddrs maps a subchannel with one address to it, so its states are
  // drawn in that address's lane.
  function scAddrs(evs) {
    var m = {};
    evs.forEach(function (e) {
      if ((e.kind === "subchannel-new" || e.kind === "subchannel-addresses") && e.subchannel && e.addrs) {
        if (m[e.subchannel] === undefined) m[e.subchannel] = e.addrs.length === 1 ? e.addrs[0] : "";
        else if (e.addrs.length !== 1 || m[e.subchannel] !== e.addrs[0]) m[e.subchannel] = "";
      }
    });
    return m;
  }
  var LANE_ORDER = { "stalls": -1, "misc": 0, "channel": 1, "balancer": 2, "picks": 3, "addr": 4, "sc": 5, "timers": 6, "rpc": 7 };
  function laneType(id) { var i = id.indexOf(":"); return i < 0 ? id : id.slice(0, i); }
  function laneName(id) {
    var t = laneType(id), rest = id.slice(t.length + 1);
    switch (t) {
      case "misc": return "resolver / stimuli";
      case "stalls": return "machine stalls";
      case "channel": return "channel";
      case "balancer": return rest ? "balancer " + rest : "balancer";
      case "addr": return rest;
      case "sc": return "subchannel " + rest;
      case "timers": return rest ? "timers " + rest : "timers";
      case "rpc": return "RPC " + rest;
      case "picks": return "picks (no RPC id)" + (rest ? " " + rest : "");
    }
    return id;
  }

  function prepare(tr) {
    if (!tr) return null;
    var m = scAddrs(tr.events);
    var lanes = {}, order = [];
    tr.events.forEach(function (e) {
      var l = laneOf(e, m);
      if (!lanes[l]) { lanes[l] = []; order.push(l); }
      lanes[l].push(e);
    });
    return { tr: tr, lanes: lanes, order: order };
  }

  function laneList(prepped) {
    var first = {}, ids = [];
    prepped.forEach(function (p) {
      if (!p) return;
      p.order.forEach(function (l) { if (first[l] === undefined) { first[l] = ids.length; ids.push(l); } });
    });
    ids.sort(function (a, b) {
      var d = LANE_ORDER[laneType(a)] - LANE_ORDER[laneType(b)];
      return d !== 0 ? d : first[a] - first[b];
    });
    return ids;
  }

  function endOf(prepped) {
    var end = 0;
    prepped.forEach(function (p) {
      if (!p) return;
      p.tr.events.forEach(function (e) {
        end = Math.max(end, e.t);
        if (e.kind === "timer-start" && e.duration) end = Math.max(end, e.t + e.duration);
      });
    });
    return Math.max(end, 1e6);
  }

  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }

  var LABEL_W = 190, PAD_L = 8, RIGHT_PAD = 16, AXIS_H = 22;
  function laneHeight(id, rows) {
    switch (laneType(id)) {
      case "addr": return 44;
      case "timers": return 8 + 18 * Math.max(1, rows);
      default: return 24;
    }
  }

  // Timer spans are packed into rows so overlapping timers stay legible.
  function timerSpans(evs, end) {
    var open = {}, spans = [];
    evs.forEach(function (e) {
      var k = (e.timer || "") + "#" + (e.timer_id || 0);
      if (e.kind === "timer-start") {
        var s = { start: e, end: null, t0: e.t, t1: null, planned: e.duration ? e.t + e.duration : null };
        open[k] = s; spans.push(s);
      } else {
        var o = open[k];
        if (o) { o.end = e; o.t1 = e.t; delete open[k]; }
        else spans.push({ start: null, end: e, t0: e.t, t1: e.t, planned: null });
      }
    });
    var rowEnds = [];
    spans.forEach(function (s) {
      var until = Math.max(s.t1 === null ? end : s.t1, s.planned || 0);
      var r = 0;
      while (r < rowEnds.length && rowEnds[r] > s.t0) r++;
      rowEnds[r] = until + 1;
      s.row = r;
    });
    return { spans: spans, rows: rowEnds.length };
  }

  // drawTimeline draws one trace (or, for a missing trace, its empty lanes)
  // on the run's shared scale.
  function drawTimeline(run, which, p, lanes, dom, width) {
    var evs = p ? p.lanes : {};
    var plotW = Math.max(200, width - LABEL_W - PAD_L - RIGHT_PAD);
    var t0 = dom[0], t1 = dom[1];
    function X(t) { return LABEL_W + PAD_L + (t - t0) / (t1 - t0) * plotW; }
    function clampX(t) { return Math.max(LABEL_W, Math.min(LABEL_W + PAD_L + plotW, X(t))); }
    var timers = {};
    var heights = lanes.map(function (id) {
      var rows = 1;
      if (laneType(id) === "timers") { timers[id] = timerSpans(evs[id] || [], t1); rows = timers[id].rows; }
      return laneHeight(id, rows);
    });
    var total = AXIS_H + heights.reduce(function (a, b) { return a + b; }, 0) + 4;
    var svg = sv("svg", {
      "class": "timeline", "data-role": which, "data-run": run.id,
      viewBox: "0 0 " + width + " " + total, width: width, height: total
    });
    var uid = run.id + "-" + which;
    svg.appendChild(sv("defs", null, [
      sv("pattern", { id: "hatch-" + uid, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, [
        sv("rect", { width: 6, height: 6, fill: "#fde8e8" }),
        sv("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#e9a3a3", "stroke-width": 2.5 })
      ]),
      sv("clipPath", { id: "clip-" + uid }, sv("rect", { x: LABEL_W, y: 0, width: PAD_L + plotW, height: total }))
    ]));

    // axis and grid
    var step = niceStep(t1 - t0, Math.max(4, Math.floor(plotW / 110)));
    var axis = sv("g", { "class": "axis" });
    var first = Math.ceil(t0 / step) * step;
    var unitS = step >= 1e9;
    for (var t = first; t <= t1 + 1; t += step) {
      var x = X(t);
      axis.appendChild(sv("line", { "class": "grid", x1: x, x2: x, y1: AXIS_H - 4, y2: total }));
      axis.appendChild(sv("text", { x: x, y: AXIS_H - 8, "text-anchor": "middle", text: unitS ? fmtMs(t / 1e9) + " s" : fmtMs(ms(t)) + " ms" }));
    }
    svg.appendChild(axis);

    var y = AXIS_H;
    var tipTexts = [];
    var cited = which === "observed" && run._focus ? citedEvents(run, run._focus) : [];
    CITED = cited.length ? cited : null;
    lanes.forEach(function (id, li) {
      var h = heights[li];
      var g = sv("g", { "class": "lane lane-" + laneType(id), "data-lane": id, transform: "translate(0," + y + ")" });
      g.appendChild(sv("rect", { x: 0, y: 0, width: width, height: h, fill: li % 2 ? "#ffffff" : "#f6f8fa" }));
      g.appendChild(sv("text", { "class": "lanelabel", x: 6, y: h / 2 + 4, text: laneName(id) }));
      var body = sv("g", { "clip-path": "url(#clip-" + uid + ")" });
      g.appendChild(body);
      drawLane(body, id, evs[id] || [], h, { X: X, clampX: clampX, t1: t1, uid: uid, timers: timers[id], plotRight: LABEL_W + PAD_L + plotW });
      svg.appendChild(g);
      y += h;
    });
    CITED = null;
    // The events the failure cites: a line through every lane, a flag on top.
    cited.forEach(function (e) {
      if (e.t < t0 || e.t > t1) return;
      var x = X(e.t), tipText = "cited by " + rowName(run._focus) + " (" + vlabel(run._focus) + "):\n" + e.str;
      svg.appendChild(sv("line", { "class": "cite-line", x1: x, x2: x, y1: AXIS_H - 2, y2: total, "data-tip": tipText }));
      svg.appendChild(sv("path", { "class": "cite-flag", d: "M" + (x - 6) + " " + (AXIS_H - 12) + "h12l-6 9z", "data-tip": tipText }));
    });

    // drag to zoom, on the plot area
    var brush = null, bx0 = 0;
    function svgX(ev) {
      var r = svg.getBoundingClientRect();
      return (ev.clientX - r.left) * width / r.width;
    }
    svg.addEventListener("mousedown", function (ev) {
      var x = svgX(ev);
      if (x < LABEL_W) return;
      bx0 = x;
      brush = sv("rect", { "class": "brush", x: x, y: AXIS_H, width: 0, height: total - AXIS_H });
      svg.appendChild(brush);
      ev.preventDefault();
    });
    svg.addEventListener("mousemove", function (ev) {
      if (!brush) return;
      var x = Math.max(LABEL_W + PAD_L, Math.min(LABEL_W + PAD_L + plotW, svgX(ev)));
      brush.setAttribute("x", Math.min(x, bx0));
      brush.setAttribute("width", Math.abs(x - bx0));
    });
    function endBrush(ev) {
      if (!brush) return;
      var x = Math.max(LABEL_W + PAD_L, Math.min(LABEL_W + PAD_L + plotW, svgX(ev)));
      svg.removeChild(brush);
      brush = null;
      if (Math.abs(x - bx0) < 6) return;
      var a = Math.max(0, t0 + (Math.min(x, bx0) - LABEL_W - PAD_L) / plotW * (t1 - t0));
      var b = t0 + (Math.max(x, bx0) - LABEL_W - PAD_L) / plotW * (t1 - t0);
      run._domain = [a, b];
      renderRun(run);
    }
    svg.addEventListener("mouseup", endBrush);
    svg.addEventListener("mouseleave", function (ev) { if (brush) endBrush(ev); });
    return svg;
  }

  function tipAttr(evsOrStrings) {
    return evsOrStrings.filter(Boolean).map(function (e) { return typeof e === "string" ? e : e.str; }).join("\n");
  }
  function mark(parent, tag, attrs, cls, evs) {
    attrs["class"] = cls;
    attrs["data-tip"] = tipAttr(evs);
    var first = evs.filter(function (e) { return e && typeof e !== "string"; })[0];
    if (first) attrs["data-kind"] = first.kind;
    if (evs.some(function (e) { return e && typeof e !== "string" && isCited(e); })) attrs["data-cited"] = "true";
    var m = sv(tag, attrs);
    parent.appendChild(m);
    return m;
  }
  function label(parent, x, y, text, opts) {
    opts = opts || {};
    var a = { x: x, y: y, "font-size": opts.size || 10, fill: opts.fill || "#1d2125", "text-anchor": opts.anchor || "start", "pointer-events": "none", text: text };
    if (opts.weight) a["font-weight"] = opts.weight;
    parent.appendChild(sv("text", a));
  }
  function fitText(text, w) {
    var cw = 6.2;
    if (text.length * cw <= w - 6) return text;
    return null;
  }

  // stateSpans draws colored spans from each state event to the next.
  function stateSpans(g, evs, y, h, ctx, cls) {
    for (var i = 0; i < evs.length; i++) {
      var e = evs[i], n = evs[i + 1];
      var x0 = ctx.X(e.t), x1 = n ? ctx.X(n.t) : ctx.plotRight;
      var st = e.state || "?";
      var w = Math.max(x1 - x0, 1.5);
      mark(g, "rect", { x: x0, y: y, width: w, height: h, fill: STATE_COLOR[st] || "#cccccc", stroke: "#0000002a", "data-state": st },
        "span " + cls + " state-" + st, [e, n ? "until " + n.str : null]);
      if (h >= 12) {
        var t = fitText(st, w) || fitText(STATE_SHORT[st] || st, w);
        if (t) label(g, x0 + 3, y + h / 2 + 3.5, t, { size: 10 });
      }
    }
  }

  function tick(g, e, ctx, y0, y1, color, cls) {
    var x = ctx.X(e.t);
    mark(g, "line", { x1: x, x2: x, y1: y0, y2: y1, stroke: color, "stroke-width": 2 }, "mark " + cls, [e]);
  }

  function drawLane(g, id, evs, h, ctx) {
    switch (laneType(id)) {
      case "channel":
      case "balancer": {
        var st = evs.filter(function (e) { return e.kind === "channel-state" || e.kind === "balancer-state"; });
        stateSpans(g, st, 4, h - 8, ctx, laneType(id) === "channel" ? "channel-state" : "balancer-state");
        evs.forEach(function (e) { if (e.kind === "pick") pickMark(g, e, ctx, h / 2); });
        return;
      }
      case "addr": return drawAddr(g, evs, h, ctx);
      case "sc": {
        var ss = evs.filter(function (e) { return e.kind === "subchannel-state"; });
        stateSpans(g, ss, 4, h - 8, ctx, "subchannel-state");
        evs.forEach(function (e) { if (e.kind !== "subchannel-state") tick(g, e, ctx, 2, h - 2, "#56606b", "subchannel"); });
        return;
      }
      case "timers": return drawTimers(g, ctx.timers, ctx);
      case "stalls": return drawStalls(g, evs, h, ctx);
      case "rpc": return drawRPC(g, evs, h, ctx);
      case "picks":
        evs.forEach(function (e) { pickMark(g, e, ctx, h / 2); });
        return;
      default: return drawMisc(g, evs, h, ctx);
    }
  }

  function drawMisc(g, evs, h, ctx) {
    evs.forEach(function (e) {
      var x = ctx.X(e.t), cy = h / 2;
      if (e.kind === "resolver-update") {
        mark(g, "path", { d: "M" + x + " " + (cy - 6) + "l6 6l-6 6l-6 -6z", fill: "#4b7bd1", stroke: "#23407a" }, "mark resolver-update", [e]);
      } else if (e.kind === "resolver-error" || e.kind === "backend-down") {
        mark(g, "path", { d: "M" + x + " " + (cy - 6) + "l6 6l-6 6l-6 -6z", fill: "#d9534f", stroke: "#7a1f1c" }, "mark " + e.kind, [e]);
      } else if (e.kind === "resolve-now" || e.kind === "exit-idle" || e.kind === "backend-up") {
        mark(g, "circle", { cx: x, cy: cy, r: 4.5, fill: "#ffffff", stroke: "#4b7bd1", "stroke-width": 2 }, "mark " + e.kind, [e]);
      } else {
        tick(g, e, ctx, 4, h - 4, "#8a939c", e.kind);
      }
    });
  }

  // drawStalls: each stall the lab's stall watch recorded, from when its
  // goroutine should have woken for as long as it was late. A timer check
  // near a long one is inconclusive.
  function drawStalls(g, evs, h, ctx) {
    evs.forEach(function (e) {
      var x0 = ctx.X(e.t), x1 = ctx.X(e.t + (e.duration || 0));
      mark(g, "rect", { x: x0, y: 4, width: Math.max(x1 - x0, 1.5), height: h - 8, fill: "#e8a33d", stroke: "#8a5a12", "stroke-width": 0.6 },
        "span stall", [e]);
    });
  }

  function pickMark(g, e, ctx, cy) {
    var x = ctx.X(e.t), queued = e.detail === "queued", failed = !!e.err && !queued;
    mark(g, "rect", { x: x - 3, y: cy - 3, width: 6, height: 6, fill: queued ? "#ffffff" : failed ? "#d9534f" : "#2f6fd6", stroke: "#23407a", "stroke-width": 1.2 },
      "mark pick" + (queued ? " queued" : failed ? " failed" : ""), [e]);
  }

  // drawAddr: faults behind, then connection attempts (a SYN, its
  // retransmits, and its fate) in the upper part, the subchannel's states
  // as a band along the bottom, backend ticks along the top.
  function drawAddr(g, evs, h, ctx) {
    var open = null;
    evs.forEach(function (e) {
      if (e.kind === "fault-set") {
        if (open) drawFault(open, e);
        open = e;
      } else if (e.kind === "fault-clear" && open) {
        drawFault(open, e); open = null;
      } else if (e.kind === "fault-clear") {
        tick(g, e, ctx, 0, h, "#c9302c", "fault-clear");
      }
    });
    if (open) drawFault(open, null);
    function drawFault(s, c) {
      var x0 = ctx.X(s.t), x1 = c ? ctx.X(c.t) : ctx.plotRight;
      mark(g, "rect", { x: x0, y: 0, width: Math.max(x1 - x0, 2), height: h, fill: "url(#hatch-" + ctx.uid + ")" },
        "span fault fault-" + (s.fault || ""), [s, c]);
      label(g, x0 + 3, h - 12, "fault: " + (s.fault || "?"), { size: 9, fill: "#8b1c1c", weight: 600 });
    }

    var band = h - 9;
    stateSpans(g, evs.filter(function (e) { return e.kind === "subchannel-state"; }), band, 7, ctx, "subchannel-state");
    evs.forEach(function (e) {
      if (/^subchannel-/.test(e.kind) && e.kind !== "subchannel-state")
        tick(g, e, ctx, band - 3, h - 1, "#56606b", "subchannel " + e.kind);
      if (e.kind === "accept" || e.kind === "preface" || e.kind === "rpc-served" || e.kind === "conn-close" || e.kind === "health-set")
        tick(g, e, ctx, 1, 7, "#6c4bb4", "backend " + e.kind);
    });

    // attempts
    var cy = 15, attempts = [], openA = {};
    function key(e) { return (e.addr || "") + "|" + (e.port || e.subchannel || ""); }
    evs.forEach(function (e) {
      if (e.kind === "syn") {
        var k = key(e), a = openA[k];
        if (e.retransmit && a) { a.syns.push(e); return; }
        a = { syns: [e], fate: null };
        openA[k] = a; attempts.push(a);
      } else if (e.kind === "syn-ack" || e.kind === "rst") {
        var a2 = openA[key(e)];
        if (!a2) { // match the latest unanswered attempt on this address
          for (var i = attempts.length - 1; i >= 0; i--) if (!attempts[i].fate) { a2 = attempts[i]; break; }
        }
        if (a2 && !a2.fate) {
          a2.fate = e;
          for (var k2 in openA) if (openA[k2] === a2) delete openA[k2];
        } else {
          drawFate(e, null);
        }
      }
    });
    attempts.forEach(function (a, i) {
      var s = a.syns[0], x0 = ctx.X(s.t);
      var xEnd;
      if (a.fate) xEnd = ctx.X(a.fate.t);
      else {
        var next = attempts[i + 1];
        xEnd = next ? ctx.X(next.syns[0].t) - 4 : ctx.plotRight;
      }
      var lineAttrs = { x1: x0, x2: Math.max(xEnd, x0), y1: cy, y2: cy, stroke: a.fate ? (a.fate.kind === "rst" ? "#c9302c" : "#2e8b45") : "#8a939c", "stroke-width": 2 };
      if (!a.fate) lineAttrs["stroke-dasharray"] = "4 3";
      mark(g, "line", lineAttrs, "span attempt" + (a.fate ? " " + a.fate.kind : " unanswered"), a.syns.concat([a.fate || "no answer"]));
      a.syns.forEach(function (e) {
        var x = ctx.X(e.t);
        if (e.retransmit) {
          mark(g, "path", { d: "M" + (x - 5) + " " + (cy - 6) + "l10 6l-10 6z", fill: "#ffffff", stroke: "#1d2125", "stroke-width": 1.5 }, "mark syn retransmit", [e]);
          label(g, x, cy - 8, "re", { size: 8, anchor: "middle" });
        } else {
          mark(g, "path", { d: "M" + (x - 5) + " " + (cy - 6) + "l10 6l-10 6z", fill: "#1d2125" }, "mark syn", [e]);
        }
      });
      if (a.fate) drawFate(a.fate, s);
      else {
        var last = a.syns[a.syns.length - 1];
        var xl = ctx.X(last.t) + 12;
        mark(g, "circle", { cx: xl, cy: cy, r: 4, fill: "#ffffff", stroke: "#8a939c", "stroke-width": 1.5 }, "mark unanswered", ["no answer to " + a.syns.map(function (x) { return x.str; }).join(", ")]);
        if (xEnd - xl > 60) label(g, xl + 8, cy + 3.5, "no answer", { size: 9, fill: "#5f6b76" });
      }
    });
    function drawFate(e, syn) {
      var x = ctx.X(e.t);
      if (e.kind === "syn-ack") {
        mark(g, "circle", { cx: x, cy: cy, r: 5.5, fill: "#2e8b45", stroke: "#14532d" }, "mark syn-ack", [e, syn ? "for " + syn.str : null]);
        label(g, x, cy + 3.5, "\u2713", { size: 9, fill: "#ffffff", anchor: "middle", weight: 700 });
      } else {
        mark(g, "rect", { x: x - 5, y: cy - 5, width: 10, height: 10, fill: "#c9302c", stroke: "#6b0f0f" }, "mark rst", [e, syn ? "for " + syn.str : null]);
        label(g, x, cy + 3.5, "\u2717", { size: 9, fill: "#ffffff", anchor: "middle", weight: 700 });
      }
    }
  }

  function drawTimers(g, T, ctx) {
    if (!T) return;
    T.spans.forEach(function (s) {
      var y = 5 + s.row * 18, h = 13;
      var x0 = ctx.X(s.t0);
      var name = (s.start || s.end).timer || "timer";
      if (s.planned !== null) {
        var xp = ctx.X(s.planned);
        mark(g, "line", { x1: x0, x2: xp, y1: y + h / 2, y2: y + h / 2, stroke: "#7a5cc2", "stroke-width": 1, "stroke-dasharray": "2 2" },
          "span timer-planned", [s.start, "planned to fire at " + fmtMs(ms(s.planned)) + " ms"]);
      }
      var x1 = s.t1 === null ? (s.planned !== null ? ctx.X(s.planned) : ctx.plotRight) : ctx.X(s.t1);
      var fate = s.end ? s.end.kind : "running";
      var r = mark(g, "rect", { x: x0, y: y, width: Math.max(x1 - x0, 2), height: h, rx: 3, fill: fate === "timer-fire" ? "#d7c8f3" : "#ece6f8", stroke: "#7a5cc2" },
        "span timer " + fate, [s.start, s.end]);
      if (s.t1 === null) r.setAttribute("stroke-dasharray", "4 3");
      var t = fitText(name, x1 - x0) ;
      label(g, t ? x0 + 4 : x1 + 10, y + h / 2 + 3.5, name, { size: 10 });
      if (s.end && s.end.kind === "timer-fire") {
        mark(g, "circle", { cx: x1, cy: y + h / 2, r: 4.5, fill: "#5b3ea8" }, "mark timer-fire", [s.end]);
      } else if (s.end) {
        mark(g, "rect", { x: x1 - 1.5, y: y - 1, width: 3, height: h + 2, fill: "#5b3ea8" }, "mark timer-stop", [s.end]);
      }
    });
  }

  function drawRPC(g, evs, h, ctx) {
    var start = null, res = null;
    evs.forEach(function (e) {
      if (e.kind === "rpc-start" && !start) start = e;
      if (e.kind === "rpc-result" && !res) res = e;
    });
    var cy = h / 2;
    var x0 = start ? ctx.X(start.t) : (res ? ctx.X(res.t) : ctx.X(0));
    var x1 = res ? ctx.X(res.t) : ctx.plotRight;
    var ok = res && (res.code === "OK" || (!res.code && !res.err));
    var bar = mark(g, "rect", { x: x0, y: cy - 5, width: Math.max(x1 - x0, 2), height: 10, rx: 2, fill: res ? (ok ? "#b9d3f5" : "#f3c1c1") : "#e6e9ed", stroke: "#5f6b76" },
      "span rpc" + (res ? (ok ? " ok" : " failed") : " unfinished"), [start, res]);
    if (!res) bar.setAttribute("stroke-dasharray", "4 3");
    evs.forEach(function (e) { if (e.kind === "pick") pickMark(g, e, ctx, cy); });
    if (res) {
      var text = ok ? "\u2192 " + (res.backend || "OK") : (res.code || "error");
      if (ok) mark(g, "circle", { cx: x1, cy: cy, r: 5, fill: "#2e8b45", stroke: "#14532d" }, "mark rpc-result ok", [res]);
      else mark(g, "rect", { x: x1 - 5, y: cy - 5, width: 10, height: 10, fill: "#c9302c", stroke: "#6b0f0f" }, "mark rpc-result failed", [res]);
      var right = x1 + 8 + text.length * 6.5 < ctx.plotRight;
      label(g, right ? x1 + 8 : x1 - 8, cy + 4, text, { size: 11, anchor: right ? "start" : "end", weight: 600, fill: ok ? "#14532d" : "#8b1c1c" });
    } else {
      label(g, x0 + 6, cy + 4, "no result", { size: 10, fill: "#5f6b76" });
    }
    evs.forEach(function (e) { if (e.kind !== "rpc-start" && e.kind !== "rpc-result" && e.kind !== "pick") tick(g, e, ctx, 2, h - 2, "#8a939c", e.kind); });
  }

  // ---- runs ---------------------------------------------------------------------
  function renderRun(run) {
    var box = run._box;
    if (!box) return;
    box.textContent = "";
    var gold = D.traces[run.golden], obs = D.traces[run.observed];
    var prepped = [prepare(gold), prepare(obs)];
    var lanes = laneList(prepped);
    var full = [0, endOf(prepped) * 1.06];
    if (run._zoom) { run._domain = citeDomain(run, run._focus, full); run._zoom = false; }
    var dom = run._domain || full;
    var cited = run._focus ? citedEvents(run, run._focus) : [];
    var width = Math.max(700, Math.floor(box.clientWidth || 1300));
    var tools = el("div", { "class": "tl-tools" }, [
      "time axis in ms since the scenario started; showing " + fmtMs(ms(dom[0])) + "\u2013" + fmtMs(ms(dom[1])) + " ms ",
      run._domain ? el("button", { type: "button", text: "reset zoom" }) : null,
      cited.length ? el("div", { "class": "citenote" }, [
        el("span", { "class": "vtext v-fail", text: "\u25bc " + vlabel(run._focus) }), " ",
        el("code", { text: rowName(run._focus) }), " cites: ",
        el("span", { "class": "mono", text: cited.map(function (e) { return e.str; }).join("; ") })
      ]) : null,
      " ", stateKey(),
      el("div", { "class": "markkey", text: "\u25b6 SYN  \u25b7 retransmitted SYN  \u2713 SYN-ACK  \u2717 RST  - - - no answer  \u25c6 resolver update  \u25a1 pick queued  \u25a0 picked  hatched: fault on the address  thin band: subchannel state  \u25cf timer fired  \u25ae timer stopped" })
    ]);
    var btn = tools.querySelector("button");
    if (btn) btn.addEventListener("click", function () { run._domain = null; renderRun(run); });
    box.appendChild(tools);
    [["golden", gold, prepped[0]], ["observed", obs, prepped[1]]].forEach(function (x) {
      var which = x[0], tr = x[1], p = x[2];
      var src = tr ? (tr.header.impl + (tr.header.impl_version ? "@" + tr.header.impl_version : "") + ", " + tr.header.mode + ", seed " + tr.header.seed + ", " + tr.events.length + " events") : "";
      box.appendChild(el("div", { "class": "tl-title" }, [which === "golden" ? "Golden" : "Observed", " ", el("span", { "class": "src", text: src ? "(" + src + ")" : "" })]));
      if (!tr) {
        box.appendChild(el("div", { "class": "tl-none", "data-role": which, text: which === "golden" ? "No golden trace for this spec and mode." : "No trace was observed" + (run.err ? ": the run broke (see above)." : ".") }));
        return;
      }
      box.appendChild(drawTimeline(run, which, p, lanes, dom, width));
    });
  }

  function stateKey() {
    var k = el("span", { "class": "statekey" });
    ["IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN"].forEach(function (s) {
      var i = el("i");
      i.style.background = STATE_COLOR[s];
      k.appendChild(el("span", null, [i, s]));
    });
    return k;
  }

  function buildRuns() {
    var idx = document.getElementById("run-index"), list = document.getElementById("run-list");
    if (!D.runs.length) { idx.appendChild(el("p", { "class": "hint", text: "No runs in this report." })); return; }
    var t = el("table", null, el("tr", null, [el("th", { text: "spec" }), el("th", { text: "mode" }), el("th", { text: "implementation" }), el("th", { text: "verdicts" })]));
    D.runs.forEach(function (r) {
      var rs = runResults[r.id] || [];
      var counts = {};
      rs.forEach(function (x) { counts[x.verdict] = (counts[x.verdict] || 0) + 1; });
      var vs = el("span");
      VERDICTS.forEach(function (v) { if (counts[v]) vs.appendChild(el("span", { "class": "vtext v-" + v, text: VLABEL[v] + " " + counts[v] + "  " })); });
      if (r.err) vs.appendChild(el("span", { "class": "vtext v-error", text: "run broke" }));
      t.appendChild(el("tr", null, [el("td", null, runLink(r, r.spec)), el("td", { text: r.mode }), el("td", { text: r.impl }), el("td", null, vs)]));

      // The section's id is not the fragment, so the browser does not
      // scroll to it by itself: fromHash shows the run alone, at the top.
      var sec = el("section", { "class": "run", id: "sec-" + r.id, "data-run": r.id, "data-impl": r.impl, "data-spec": r.spec, "data-mode": r.mode });
      var tr = D.traces[r.observed] || D.traces[r.golden];
      var desc = tr && tr.header.scenario && tr.header.scenario.description;
      sec.appendChild(el("div", { "class": "runhead" }, [el("h3", { "class": "mono", text: r.spec + " [" + r.mode + "]" }), el("span", { text: r.impl })]));
      if (desc) sec.appendChild(el("p", { "class": "desc", text: desc }));
      var vd = el("div", { "class": "verdicts" });
      rs.forEach(function (x) {
        var s = el("span", null, [el("span", { "class": "vtext v-" + x.verdict, text: vlabel(x) }), " ", el("code", { text: rowName(x) })]);
        if (x.evidence) s.title = x.evidence;
        vd.appendChild(s);
      });
      sec.appendChild(vd);
      rs.forEach(function (x) {
        if (!x.evidence || x.verdict === "pass" || x.evidence === r.err) return;
        var show = null;
        if (x.cites && x.cites.length) {
          show = el("button", { type: "button", "class": "showcite", text: "show on the timeline" });
          show.addEventListener("click", function () { focusOn(r, x); });
          if (!r._focus) { r._focus = x; r._zoom = true; }
        }
        sec.appendChild(el("details", { "class": "ev", open: x.verdict === "fail" ? "" : null }, [
          el("summary", null, [el("span", { "class": "vtext v-" + x.verdict, text: vlabel(x) }), " ", el("code", { text: rowName(x) }), show ? " " : null, show]),
          el("pre", { "class": "evidence", text: x.evidence })
        ]));
      });
      if (r.err) sec.appendChild(el("pre", { "class": "err", text: "run broke: " + r.err }));
      var box = el("div", { "class": "tl" });
      sec.appendChild(box);
      list.appendChild(sec);
      r._box = box;
    });
    idx.appendChild(t);
    D.runs.forEach(renderRun);
  }

  // A run's link opens the run alone (#run-N), its evidence on top; the
  // browser's back button, or "all verdicts and runs", returns.
  function goToRun(id, push) {
    if (push) location.hash = id;
    else fromHash();
  }
  function fromHash() {
    var h = decodeURIComponent(location.hash.slice(1));
    var sec = /^run-\d+$/.test(h) ? document.getElementById("sec-" + h) : null;
    document.querySelectorAll("section.run.focused").forEach(function (s) { s.classList.remove("focused"); });
    var nav = document.getElementById("focusnav");
    nav.textContent = "";
    if (!sec) { document.body.classList.remove("focus"); return; }
    document.body.classList.add("focus");
    sec.classList.add("focused");
    var i = 0;
    D.runs.forEach(function (r, j) { if (r.id === h) i = j; });
    var back = el("a", { href: "#", text: "\u25c2 all verdicts and runs" });
    back.addEventListener("click", function (ev) { ev.preventDefault(); history.pushState(null, "", location.pathname); fromHash(); });
    nav.appendChild(back);
    nav.appendChild(el("span", { "class": "hint", text: "run " + (i + 1) + " of " + D.runs.length }));
    if (i > 0) nav.appendChild(el("a", { href: "#" + D.runs[i - 1].id, text: "\u25c2 previous" }));
    if (i + 1 < D.runs.length) nav.appendChild(el("a", { href: "#" + D.runs[i + 1].id, text: "next \u25b8" }));
    window.scrollTo(0, 0);
  }

  // ---- hover: the event(s) behind a mark ------------------------------------------
  var tip = document.getElementById("tip"), hl = null;
  document.addEventListener("mouseover", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-tip]") : null;
    if (hl && hl !== t) { hl.classList.remove("hl"); hl = null; }
    if (!t || !t.getAttribute("data-tip")) { tip.hidden = true; return; }
    tip.textContent = t.getAttribute("data-tip");
    tip.hidden = false;
    hl = t; t.classList.add("hl");
  });
  document.addEventListener("mousemove", function (ev) {
    if (tip.hidden) return;
    var x = ev.clientX + 14, y = ev.clientY + 16;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 16);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  });

  // ---- since ---------------------------------------------------------------
  function buildSince() {
    if (!D.since || !D.since.length) return;
    var box = document.getElementById("since-tables");
    D.since.forEach(function (sv) {
      var v = sv.versions;
      var table = el("table", { "class": "since", "data-impl": sv.impl }, [
        el("caption", { text: sv.impl + ": " + v.length + " releases, " + v[0] + " \u2026 " + v[v.length - 1] }),
        el("thead", null, el("tr", null, [el("th", { text: "requirement" }), el("th", { text: "first pass" }), el("th", { text: "regressed at" })]))
      ]);
      var body = el("tbody");
      sv.rows.forEach(function (r) {
        body.appendChild(el("tr", { "data-req": r.requirement }, [
          el("td", null, el("code", { text: r.requirement })),
          el("td", { "class": r.first_pass ? "first" : "never", text: (r.first_pass || "never") + (r.uncertain ? "*" : ""),
            title: r.uncertain ? "an older release gave no verdict on it (inconclusive or error): it may have passed earlier" : null }),
          el("td", { "class": r.regressed && r.regressed.length ? "regressed" : "", text: r.regressed && r.regressed.length ? r.regressed.join(", ") : "\u2013" })
        ]));
      });
      table.appendChild(body);
      box.appendChild(table);
    });
    document.getElementById("since").hidden = false;
  }

  buildMatrix();
  buildSince();
  buildRuns();
  var resizeTimer = null, lastW = window.innerWidth;
  window.addEventListener("resize", function () {
    if (window.innerWidth === lastW) return;
    lastW = window.innerWidth;
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { D.runs.forEach(renderRun); }, 150);
  });
  window.addEventListener("hashchange", fromHash);
  window.addEventListener("popstate", fromHash);
  fromHash();
  document.body.setAttribute("data-rendered", "true");
})();
