// Annotator screens: keyboard shortcuts, "submit only when complete", active time.
// Works with the htmx swaps (#annotate is replaced after each submit) and degrades to plain
// forms without JavaScript: the server checks everything this script checks.
(function () {
  "use strict";
  // htmx runs the page's scripts again when Back or Forward restores a page from its history:
  // a second copy of these listeners would act on every key and click twice.
  if (window.llmevalAnnotate) return;
  window.llmevalAnnotate = true;

  var IDLE_MS = 30000; // no input for this long: the time no longer counts as active
  var activeMs = 0, lastTick = performance.now(), lastInput = performance.now();

  function root() { return document.getElementById("annotate"); }
  function rateForm() { return document.getElementById("rate-form"); }

  // -- Active time: visible, focused and touched in the last IDLE_MS. -------------------------
  function tick() {
    var now = performance.now();
    if (document.visibilityState === "visible" && document.hasFocus() && now - lastInput < IDLE_MS) {
      activeMs += now - lastTick;
    }
    lastTick = now;
    var field = document.querySelector("[data-active-ms]");
    if (field) field.value = String(Math.round(activeMs));
  }
  setInterval(tick, 1000);
  ["keydown", "mousemove", "mousedown", "scroll", "touchstart", "wheel"].forEach(function (ev) {
    document.addEventListener(ev, function () { tick(); lastInput = performance.now(); }, { passive: true, capture: true });
  });
  document.addEventListener("visibilitychange", tick);

  // -- Completeness: Submit is enabled once every criterion (or the choice) is given. --------
  function criteria() { var r = root(); return r ? Array.prototype.slice.call(r.querySelectorAll("fieldset.criterion")) : []; }
  function complete() {
    var r = root();
    if (!r) return false;
    if (r.dataset.mode === "pairwise") return !!r.querySelector("input[name=choice]:checked");
    return criteria().every(function (fs) { return !!fs.querySelector("input[type=radio]:checked"); });
  }
  function refresh() {
    var r = root();
    if (!r) return;
    var btn = r.querySelector("[data-action=submit]");
    if (btn) btn.disabled = !complete();
    criteria().forEach(function (fs) {
      var checked = fs.querySelector("input:checked");
      var value = checked ? parseInt(checked.value, 10) : 0;
      // Stars 1 up to the given one are lit; a 0 (scales from 0) is a "0", never a lit star.
      fs.querySelectorAll("label.star").forEach(function (lab) {
        var star = parseInt(lab.querySelector("input").value, 10);
        lab.classList.toggle("on", star >= 1 && star <= value);
      });
      var desc = fs.querySelector("[data-star-desc]");
      if (desc) desc.textContent = checked ? checked.closest("label").title : "";
    });
  }
  function setCurrent(index) {
    var list = criteria();
    list.forEach(function (fs, i) { fs.classList.toggle("current", i === index); });
    var r = root();
    if (r) r.dataset.current = String(index);
  }
  function current() { var r = root(); return r && r.dataset.current ? parseInt(r.dataset.current, 10) : 0; }

  function init() {
    tick();
    activeMs = 0; // a new item starts its own active time
    lastInput = performance.now();
    var field = document.querySelector("[data-active-ms]");
    if (field) field.value = "0";
    setCurrent(0);
    refresh();
    var r = root();
    if (r) r.dataset.ready = "1"; // the keys work from now on (tests wait for this)
  }

  // The criterion the digit keys rate: the one holding the focused star, else the highlighted one.
  function focusedCriterion() {
    var el = document.activeElement, fs = el && el.closest && el.closest("fieldset.criterion");
    return fs ? criteria().indexOf(fs) : -1;
  }
  // Move on to criterion i: highlight it and put the focus on its given star (or its first), so
  // the arrow keys, Space and the digits all act on the criterion the annotator sees highlighted.
  function goTo(i, scroll) {
    var list = criteria();
    if (i < 0 || i >= list.length) return;
    setCurrent(i);
    var radio = list[i].querySelector("input[type=radio]:checked") || list[i].querySelector("input[type=radio]");
    if (radio) radio.focus({ preventScroll: !scroll });
  }

  var arrowing = false; // the change below comes from an arrow key on a focused radio
  document.addEventListener("change", function (e) {
    var fs = e.target.closest && e.target.closest("fieldset.criterion");
    if (fs && !arrowing) {
      var i = criteria().indexOf(fs);
      if (i >= 0) goTo(i + 1, false);
    }
    refresh();
  });
  document.addEventListener("focusin", function (e) {
    var fs = e.target.closest && e.target.closest("fieldset.criterion");
    if (fs) setCurrent(criteria().indexOf(fs));
  });
  // Star hover preview.
  document.addEventListener("mouseover", function (e) {
    var lab = e.target.closest && e.target.closest("label.star");
    if (!lab) return;
    var desc = lab.closest("fieldset").querySelector("[data-star-desc]");
    if (desc) desc.textContent = lab.title;
  });

  // Text entry: every key belongs to the field, no shortcut applies.
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    if (el.isContentEditable || tag === "TEXTAREA" || tag === "SELECT") return true;
    return tag === "INPUT" && !/^(radio|checkbox|button|submit|hidden)$/i.test(el.type);
  }
  // Any form control, radios and checkboxes included: the arrow keys move its value (a focused
  // star radio goes to the next star), so they must never leave the item.
  function ownsArrows(el) {
    if (!el) return false;
    // A focused answer pane or code block scrolls with the arrows (a long line scrolls sideways).
    return typing(el) || el.tagName === "INPUT" || !!(el.closest && el.closest(".answer, .md, pre"));
  }
  // The star a digit gives: 1-9 as themselves; 0 is 10 on a scale that has a 10 and no 0
  // (AlignBench's 1-10), else 0.
  function starFor(fieldset, key) {
    var wanted = key;
    if (key === "0" && !fieldset.querySelector("input[value='0']")) wanted = "10";
    return fieldset.querySelector("input[type=radio][value='" + wanted + "']");
  }
  function submit() {
    var f = rateForm(), btn = root() && root().querySelector("[data-action=submit]");
    if (!f || !btn || btn.disabled) return;
    tick();
    f.requestSubmit(btn);
  }
  function click(action) {
    var el = root() && root().querySelector("[data-action=" + action + "]");
    if (el) el.click();
  }

  document.addEventListener("keyup", function () { arrowing = false; });
  document.addEventListener("keydown", function (e) {
    var r = root();
    arrowing = false;
    if (!r || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (/^Arrow/.test(e.key) && ownsArrows(e.target)) { arrowing = true; return; }
    if (/^[0-9]$/.test(e.key)) {
      if (r.dataset.mode === "pairwise") {
        var opt = r.querySelector("input[name=choice][data-key='" + e.key + "']");
        if (opt) { opt.checked = true; opt.focus(); refresh(); e.preventDefault(); }
        return;
      }
      var list = criteria(), i = focusedCriterion();
      if (i < 0) i = Math.min(current(), list.length - 1);
      if (i < 0) return;
      var input = starFor(list[i], e.key);
      if (!input) return; // out of this criterion's range
      input.checked = true;
      refresh();
      if (i + 1 < list.length) goTo(i + 1, true);
      else input.focus({ preventScroll: true });
      e.preventDefault();
    } else if (e.key === "Enter") {
      if (e.target && (e.target.tagName === "BUTTON" || e.target.tagName === "A")) return;
      e.preventDefault();
      submit();
    } else if (e.key === "s" || e.key === "S") {
      e.preventDefault();
      click("skip");
    } else if (e.key === "Backspace" || e.key === "ArrowLeft") {
      e.preventDefault();
      click("previous");
    } else if (e.key === "ArrowUp" && r.dataset.mode !== "pairwise") {
      e.preventDefault(); setCurrent(Math.max(0, current() - 1));
    } else if (e.key === "ArrowDown" && r.dataset.mode !== "pairwise") {
      e.preventDefault(); setCurrent(Math.min(criteria().length - 1, current() + 1));
    }
  });

  // Clicking a criterion makes it the current one for the digit keys.
  document.addEventListener("click", function (e) {
    var fs = e.target.closest && e.target.closest("fieldset.criterion");
    if (fs && !(e.target.closest("label.star"))) setCurrent(criteria().indexOf(fs));
  });

  // One request at a time: a double click or a held Enter cannot post twice.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var r = root();
    if (r && r.contains(e.target)) {
      if (r.dataset.busy === "1") { e.preventDefault(); return; }
      r.dataset.busy = "1";
    }
  });
  document.addEventListener("htmx:afterRequest", function () { var r = root(); if (r) r.dataset.busy = ""; });
  document.addEventListener("htmx:afterSwap", function (e) { if (root() && (e.target.id === "annotate" || root().contains(e.target) || e.target === document.body)) init(); });
  // Back and Forward restore htmx's copy of a page, taken while its submit was in flight: the
  // copy says busy, and nothing could be sent from it again.
  document.addEventListener("htmx:historyRestore", function () {
    var r = root();
    if (r) delete r.dataset.busy;
    init();
  });

  // A request that failed leaves the item and what was given on the page, and says so (htmx
  // swaps nothing on an error status or a lost connection, which would otherwise look like a
  // dead button).
  function problem(text) {
    var r = root();
    if (!r) return;
    var box = r.querySelector("[data-request-error]");
    if (!box) {
      box = document.createElement("p");
      box.className = "errors";
      box.setAttribute("role", "alert");
      box.setAttribute("data-request-error", "");
      r.insertBefore(box, r.firstChild);
    }
    box.textContent = text;
  }
  // A refused rating comes back as 422 with the item and its messages: swap it in like a success
  // (htmx leaves error statuses unswapped), so the annotator sees what to fix.
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.xhr.status === 422) { e.detail.shouldSwap = true; e.detail.isError = false; }
  });
  document.addEventListener("htmx:responseError", function (e) {
    // A short plain message from the server (e.g. "Too many requests") is shown as it is.
    var xhr = e.detail.xhr, text = xhr.responseText || "";
    var body = text.length < 300 && text.indexOf("<") < 0 ? text : "";
    problem(body || (root().dataset.msgError || "Error") + " (" + xhr.status + ")");
  });
  document.addEventListener("htmx:sendError", function () { problem(root().dataset.msgOffline || "Offline"); });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
