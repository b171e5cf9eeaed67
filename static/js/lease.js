// The item page's heartbeat: while the annotator is here and active, renew the lease on the
// item they hold (see annotation/leases.py). An idle or hidden tab stops renewing, so an
// abandoned item goes back to the pool after the study's lease. Without JavaScript, page views
// and submits renew the lease just the same.
(function () {
  "use strict";
  // htmx runs the page's scripts again when Back or Forward restores a page from its history:
  // a second copy of these listeners would act on every key and click twice.
  if (window.llmevalLease) return;
  window.llmevalLease = true;

  var IDLE_MS = 10 * 60 * 1000; // no input for this long: the annotator has left
  var lastInput = Date.now(), lastBeat = Date.now();

  ["keydown", "mousemove", "mousedown", "scroll", "touchstart", "wheel"].forEach(function (ev) {
    document.addEventListener(ev, function () { lastInput = Date.now(); }, { passive: true, capture: true });
  });

  function beat() {
    var root = document.getElementById("annotate");
    if (!root || !root.dataset.lease) return;
    var period = Math.max(15, Number(root.dataset.leaseSeconds || 180) / 3) * 1000;
    var now = Date.now();
    if (now - lastBeat < period) return;
    if (document.visibilityState !== "visible" || now - lastInput > IDLE_MS) return;
    lastBeat = now;
    var token = document.querySelector("#rate-form input[name=csrfmiddlewaretoken]");
    fetch(root.dataset.lease, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "" },
    }).then(function (response) {
      // Held for the study's maximum (ANNOTATION_MAX_HOLD): the item went back to the pool; the
      // next page says so and shows the annotator's next item.
      if (response.status !== 409) return;
      return response.json().then(function (body) {
        if (body && body.next) window.location.assign(body.next);
      }, function () { /* a plain 409: the item is no longer held, nothing to do */ });
    }).catch(function () { /* the next beat or the submit renews it */ });
  }
  setInterval(beat, 5000);
})();
