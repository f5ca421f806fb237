"use strict";
// Follows the live registry over server-sent events: each "live" event is
// the live section, rendered (and escaped) by the server, that replaces
// the one on the page.
(function () {
  var live = document.getElementById("live");
  var status = document.getElementById("status");
  function show(text, cls) {
    status.textContent = text;
    status.className = cls;
  }
  if (!window.EventSource) {
    show("this browser cannot follow changes: reload to see them", "down");
    return;
  }
  var events = new EventSource(location.pathname + location.search);
  events.addEventListener("live", function (e) {
    live.innerHTML = e.data;
    document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
    show("live", "ok");
  });
  events.onerror = function () {
    show(events.readyState === EventSource.CLOSED ? "disconnected: reload to retry" : "reconnecting…", "down");
  };
})();
