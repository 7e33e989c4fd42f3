// Follows the run while it goes on: the server sends each new step as HTML and the sections that changed.
(function () {
  const body = document.body;
  const url = body.dataset.events;
  if (!url || body.dataset.finished === "true" || !window.EventSource) return;
  const status = document.getElementById("live-status");
  const events = new EventSource(url);
  events.addEventListener("update", function (message) {
    const update = JSON.parse(message.data);
    for (const [id, html] of Object.entries(update.sections)) {
      const old = document.getElementById(id);
      if (old) old.outerHTML = html;
    }
    const steps = document.getElementById("steps");
    for (const html of update.items) steps.insertAdjacentHTML("beforeend", html);
    body.dataset.records = String(update.records);
  });
  events.addEventListener("end", function () {
    events.close();
    body.dataset.finished = "true";
    if (status) status.textContent = "the run has ended";
  });
  events.addEventListener("restart", function () {
    events.close();
    window.location.reload();
  });
  events.onerror = function () {
    if (status) status.textContent = events.readyState === EventSource.CLOSED ? "live updates stopped" : "reconnecting…";
  };
  events.onopen = function () {
    if (status) status.textContent = "live: updates as the run goes on";
  };
})();
