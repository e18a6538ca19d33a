/**
 * The dashboard's one script, served by the handler at `assets/dashboard.js`. Progressive
 * enhancement only: every page works without it. It refreshes counts in place, selects every
 * row of a list, asks before destructive actions and follows a bulk job's progress.
 *
 * @module
 */

/** The script's text. */
export const DASHBOARD_JS = `"use strict";
(function () {
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }

  // Live counts: elements with data-count="table|group|state" are refreshed from data-counts-url.
  var live = document.querySelector("[data-counts-url]");
  if (live) {
    var url = live.getAttribute("data-counts-url");
    var every = Number(live.getAttribute("data-refresh-ms")) || 2000;
    var refresh = function () {
      fetch(url, { credentials: "same-origin", headers: { accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) {
          if (!data) return;
          each("[data-count]", function (element) {
            var value = data.values[element.getAttribute("data-count")];
            if (value !== undefined) element.textContent = String(value);
          });
          each("[data-paused]", function (element) {
            var paused = data.paused[element.getAttribute("data-paused")];
            if (paused !== undefined) element.hidden = !paused;
          });
          var stamp = document.querySelector("[data-read-at]");
          if (stamp && data.readAt) stamp.textContent = data.readAt;
        })
        .catch(function () {});
    };
    setInterval(refresh, every);
  }

  // Select every row of a list.
  each("input[data-select-all]", function (box) {
    box.addEventListener("change", function () {
      each("input[name=id]", function (row) { row.checked = box.checked; });
    });
  });

  // Ask before destructive actions.
  each("button[data-confirm]", function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
    });
  });

  // A bulk job's progress: poll its JSON and update the bar; reload when it ends.
  var job = document.querySelector("[data-job-url]");
  if (job) {
    var jobUrl = job.getAttribute("data-job-url");
    var bar = job.querySelector("progress");
    var text = job.querySelector("[data-job-done]");
    var poll = function () {
      fetch(jobUrl, { credentials: "same-origin", headers: { accept: "application/json" } })
        .then(function (response) { return response.json(); })
        .then(function (data) {
          if (text) text.textContent = String(data.done);
          if (bar && data.total !== null) { bar.max = data.total; bar.value = data.done; }
          if (data.finished) window.location.reload(); else setTimeout(poll, 500);
        })
        .catch(function () { setTimeout(poll, 1000); });
    };
    setTimeout(poll, 300);
  }
})();
`;
