// Every page: a box that scrolls sideways (a wide table or a long code line on a phone) takes the
// keyboard focus, so it can be scrolled without a mouse (WCAG 2.1.1, axe's
// scrollable-region-focusable). Re-checked after htmx swaps and when the window is resized.
(function () {
  "use strict";
  var SELECTOR = "pre, table, .table-wrap, .table-scroll";
  function mark(root) {
    (root || document).querySelectorAll(SELECTOR).forEach(function (el) {
      if (el.hasAttribute("tabindex")) return;
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible") {
        el.tabIndex = 0;
      }
    });
  }
  var pending = 0;
  function later() { clearTimeout(pending); pending = setTimeout(function () { mark(); }, 150); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { mark(); });
  else mark();
  document.addEventListener("htmx:afterSettle", function (e) { mark(e.target); });
  window.addEventListener("resize", later);
})();
