// The console's only script: the token, the search box and the live decisions. No framework, no build step.
// Every piece of HTML it inserts was rendered (and escaped) by the server.
"use strict";

(function () {
  const body = document.body;
  const base = body.dataset.base;
  const needsToken = body.dataset.auth === "token";
  const KEEP = 200; // decisions kept on the page
  let token = null;
  let live = null; // the AbortController of the open event stream

  function headers() {
    return token ? { Authorization: "Bearer " + token } : {};
  }

  function setState(text) {
    const state = document.getElementById("live-state");
    if (state) state.textContent = text;
  }

  async function fetchHtml(path) {
    const response = await fetch(base + path, { headers: headers(), cache: "no-store" });
    return { ok: response.ok, html: await response.text() };
  }

  function wireSearch() {
    const form = document.getElementById("find-form");
    if (!form) return;
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      const query = document.getElementById("query").value;
      const results = document.getElementById("results");
      results.setAttribute("aria-busy", "true");
      const answer = await fetchHtml("/find?q=" + encodeURIComponent(query));
      results.innerHTML = answer.html;
      results.removeAttribute("aria-busy");
    });
  }

  function addDecision(html) {
    const list = document.getElementById("decisions");
    list.insertAdjacentHTML("afterbegin", html);
    while (list.children.length > KEEP) list.removeChild(list.lastElementChild);
  }

  // Server-sent events read with fetch, so that the bearer token goes in a header (EventSource sends none).
  async function follow() {
    if (live) live.abort();
    live = new AbortController();
    const signal = live.signal;
    let response;
    try {
      response = await fetch(base + "/events", { headers: headers(), cache: "no-store", signal: signal });
    } catch (error) {
      if (!signal.aborted) setState("not connected");
      return;
    }
    if (!response.ok) {
      setState("not connected: " + (await response.text()));
      return;
    }
    setState("live");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        buffer += decoder.decode(chunk.value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
    }
    if (!signal.aborted && document.getElementById("live-state").textContent === "live") setState("ended");
  }

  function dispatch(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (name === "decision") addDecision(JSON.parse(data.join("\n")).html);
    else if (name === "dropped") setState("stopped: this page fell behind; reload it to follow again");
  }

  async function showView() {
    const answer = await fetchHtml("/view");
    const error = document.getElementById("token-error");
    if (!answer.ok) {
      error.innerHTML = answer.html;
      error.hidden = false;
      return;
    }
    error.hidden = true;
    document.getElementById("view").innerHTML = answer.html;
    wireSearch();
    follow();
  }

  if (needsToken) {
    document.getElementById("token-form").addEventListener("submit", function (event) {
      event.preventDefault();
      token = document.getElementById("token").value.trim();
      showView();
    });
  } else {
    wireSearch();
    follow();
  }
})();
