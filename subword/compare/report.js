// subword compare report: hovering a token highlights the tokens of the other tokenizers that cover the
// same characters of the line, and shows the token's ids and bytes. Everything else is static HTML.
// With ?selfcheck in the address the page hovers each token itself and writes what it saw into
// <pre id="selfcheck"> (the browser tests read it).
(function () {
  "use strict";

  // [s, e) character spans; a zero-width span is a point that overlaps the spans containing it.
  function overlaps(s1, e1, s2, e2) {
    if (s1 === e1 && s2 === e2) return s1 === s2;
    if (s1 === e1) return s2 <= s1 && s1 < e2;
    if (s2 === e2) return s1 <= s2 && s2 < e1;
    return Math.max(s1, s2) < Math.min(e1, e2);
  }

  var tip = document.getElementById("tip");

  function describe(tok) {
    var row = tok.closest(".row");
    var bytes = (tok.dataset.bytes || "").replace(/(..)/g, "$1 ").trim();
    var parts = [
      ["tokenizer", row ? row.dataset.name : ""],
      [tok.dataset.ids.indexOf(" ") >= 0 ? "ids" : "id", tok.dataset.ids],
      ["bytes", bytes || "(none)"],
      ["text", JSON.stringify(tok.dataset.text)],
      ["chars", tok.dataset.s + "–" + tok.dataset.e],
    ];
    tip.textContent = "";
    parts.forEach(function (p) {
      var line = document.createElement("div");
      var k = document.createElement("span");
      k.className = "k";
      k.textContent = p[0];
      var v = document.createElement("span");
      v.className = "v";
      v.textContent = p[1];
      line.appendChild(k);
      line.appendChild(v);
      tip.appendChild(line);
    });
  }

  function clear(sample) {
    sample.querySelectorAll(".tok.hl, .tok.active").forEach(function (t) {
      t.classList.remove("hl", "active");
    });
  }

  function enter(tok, x, y) {
    var sample = tok.closest(".sample");
    clear(sample);
    tok.classList.add("active");
    var s = +tok.dataset.s, e = +tok.dataset.e, row = tok.closest(".row");
    sample.querySelectorAll(".row").forEach(function (other) {
      if (other === row) return;
      other.querySelectorAll(".tok").forEach(function (t) {
        if (overlaps(s, e, +t.dataset.s, +t.dataset.e)) t.classList.add("hl");
      });
    });
    describe(tok);
    tip.style.display = "block";
    var w = tip.offsetWidth, h = tip.offsetHeight;
    tip.style.left = Math.max(4, Math.min(x + 12, window.innerWidth - w - 8)) + "px";
    tip.style.top = (y + 18 + h > window.innerHeight ? y - h - 10 : y + 18) + "px";
  }

  function leave(tok) {
    clear(tok.closest(".sample"));
    tip.style.display = "none";
  }

  document.querySelectorAll(".sample").forEach(function (sample) {
    sample.addEventListener("mouseover", function (ev) {
      var tok = ev.target.closest(".tok");
      if (tok && sample.contains(tok)) enter(tok, ev.clientX, ev.clientY);
    });
    sample.addEventListener("mouseout", function (ev) {
      var tok = ev.target.closest(".tok");
      if (tok && !(ev.relatedTarget && tok.contains(ev.relatedTarget))) leave(tok);
    });
  });

  if (/[?&]selfcheck\b/.test(location.search)) {
    var results = [];
    document.querySelectorAll(".sample").forEach(function (sample, si) {
      var rows = Array.prototype.slice.call(sample.querySelectorAll(".row"));
      rows.forEach(function (row, ri) {
        row.querySelectorAll(".tok").forEach(function (tok, ti) {
          var r = tok.getBoundingClientRect();
          tok.dispatchEvent(new MouseEvent("mouseover", {bubbles: true, clientX: r.left + 1, clientY: r.top + 1}));
          var lit = [];
          rows.forEach(function (other, oi) {
            other.querySelectorAll(".tok").forEach(function (t, k) {
              if (t.classList.contains("hl")) lit.push([oi, k]);
            });
          });
          var tipText = tip.textContent;
          var shown = tip.style.display === "block";
          var active = tok.classList.contains("active");
          tok.dispatchEvent(new MouseEvent("mouseout", {bubbles: true, relatedTarget: document.body}));
          results.push({sample: si, row: ri, token: ti, highlighted: lit, active: active, tip_shown: shown,
                        tip_has_ids: tipText.indexOf(tok.dataset.ids) >= 0,
                        tip_has_bytes: tipText.indexOf((tok.dataset.bytes || "").slice(0, 2)) >= 0,
                        cleared: sample.querySelectorAll(".tok.hl, .tok.active").length === 0});
        });
      });
    });
    // Layout: where each row's first token sits (right edge for right-to-left rows), and whether the byte
    // pieces inside a token run left to right.
    var layout = [];
    document.querySelectorAll(".sample").forEach(function (sample, si) {
      sample.querySelectorAll(".row").forEach(function (row, ri) {
        var toks = row.querySelectorAll(".tok");
        if (!toks.length) return;
        var box = row.getBoundingClientRect(), first = toks[0].getBoundingClientRect();
        var bytesInOrder = true;
        toks.forEach(function (t) {
          var pieces = t.querySelectorAll(".b");
          for (var k = 1; k < pieces.length; k++) {
            var a = pieces[k - 1].getBoundingClientRect(), b = pieces[k].getBoundingClientRect();
            if (a.top === b.top && !(a.left < b.left)) bytesInOrder = false;
          }
        });
        layout.push({sample: si, row: ri, dir: getComputedStyle(row).direction,
                     first_left_gap: first.left - box.left, first_right_gap: box.right - first.right,
                     byte_pieces_ltr: bytesInOrder});
      });
    });
    var out = document.getElementById("selfcheck");
    out.textContent = JSON.stringify({hover: results, layout: layout});
  }
})();
