// The status page's live part (host/src/api/ui.rs): polls the JSON API
// named by <body data-poll> every second and writes what changed as text
// (textContent only, never markup). Reads only; sends nothing but GETs.
(function () {
  "use strict";
  var poll = document.body.getAttribute("data-poll");
  if (!poll) { return; }
  function version(app) {
    if (app.target_version && app.target_version !== app.active_version) {
      return app.active_version + " \u2192 " + app.target_version;
    }
    return app.active_version;
  }
  function firstLine(text) { return (text || "").split("\n")[0]; }
  function set(scope, field, text) {
    var nodes = scope.querySelectorAll('[data-field="' + field + '"]');
    for (var i = 0; i < nodes.length; i++) {
      if (nodes[i].textContent !== text) { nodes[i].textContent = text; }
      if (field === "state") { nodes[i].className = "state " + text; }
    }
  }
  function show(scope, app) {
    set(scope, "state", app.state);
    set(scope, "version", version(app));
    set(scope, "progress", app.progress || "");
    set(scope, "message", firstLine(app.message));
    set(scope, "message-full", app.message || "");
    set(scope, "reapply", app.reapply_needed ? "reapply needed" : "");
    set(scope, "reapply-full", app.reapply_needed || "");
  }
  function scopes() {
    var found = {};
    var nodes = document.querySelectorAll("[data-app]");
    for (var i = 0; i < nodes.length; i++) {
      var name = nodes[i].getAttribute("data-app");
      (found[name] = found[name] || []).push(nodes[i]);
    }
    return found;
  }
  var live = document.createElement("p");
  live.className = "note";
  live.id = "live";
  document.querySelector("main").appendChild(live);
  function tick() {
    fetch(poll, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (data) {
        var apps = Array.isArray(data) ? data : [data];
        var where = scopes();
        apps.forEach(function (app) {
          (where[app.name] || []).forEach(function (scope) { show(scope, app); });
        });
        live.textContent = "live: updated " + new Date().toLocaleTimeString();
      })
      .catch(function (e) { live.textContent = "live: " + e.message; })
      .then(function () { setTimeout(tick, 1000); });
  }
  tick();
})();
