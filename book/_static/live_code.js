// The "Run code" button: the page's code cells become editable cells that run on the
// Jupyter server `make serve` starts on this machine (tools/serve.py). tools/live_code.py adds
// this script to pages with code cells, with a JSON block (#tied-live) that says where the
// kernel starts and holds the code of the cells the page does not show. thebe's bundle is
// loaded from the book (_static/vendor/thebe) only when the button is pressed.

(() => {
  const PAGE = JSON.parse(document.getElementById("tied-live").textContent);
  const STATIC = new URL(".", document.currentScript.src).href;
  const KEY = "tied-live-server";   // {url, token}, per book address (localStorage is per origin)
  const HOW = "run <code>make serve</code> in the repository and open the address it prints";
  // Where no server answers (a static copy of the book): the page as a notebook, to run in
  // one's own Jupyter, and the command that makes this button work.
  const OFFLINE = `<a href="${PAGE.notebook}" download>download this page as a notebook</a> `
    + `(.ipynb) and open it in Jupyter next to the book's <code>book/</code> folder, or ${HOW}`;

  // `make serve` prints the book's address with the server in its fragment:
  // #jupyter=http://127.0.0.1:8889&token=... Kept for the other pages, then taken off the
  // address bar, so that it is not bookmarked or shared.
  // Only a server on this machine: a link cannot send the reader's code anywhere else.
  const LOCAL_SERVER = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+\/?$/;
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (LOCAL_SERVER.test(fragment.get("jupyter")) && /^[\w-]+$/.test(fragment.get("token"))) {
    try {
      localStorage.setItem(KEY, JSON.stringify({url: fragment.get("jupyter"), token: fragment.get("token")}));
    } catch {}
    history.replaceState(null, "", location.pathname + location.search);
  }
  const server = () => {
    try {
      const stored = JSON.parse(localStorage.getItem(KEY));
      return stored && LOCAL_SERVER.test(stored.url) && stored.token ? stored : null;
    } catch {
      return null;
    }
  };

  // Under the page's title (the header has no room for it on a phone): the button, then
  // what it is doing or why it cannot.
  const bar = document.createElement("div");
  bar.className = "tied-live";
  const button = document.createElement("button");
  button.className = "tied-live-button";
  button.type = "button";
  button.title = "Edit and run this page's code, on a Jupyter server on this machine";
  button.innerHTML = '<i class="fa-solid fa-play"></i> Run code';
  const status = document.createElement("div");
  status.className = "tied-live-status";
  status.setAttribute("role", "status");
  status.hidden = true;
  bar.append(button, status);
  const say = (state, html) => {
    button.dataset.state = state;
    status.dataset.state = state;
    status.innerHTML = html;
    status.hidden = false;
  };
  const title = document.querySelector("article h1");
  if (title) title.after(bar);
  else (document.querySelector("article") || document.body).prepend(bar);

  // thebe's cells and their outputs, matched in page order: one [data-output] per
  // [data-executable], an empty one where a cell has no output. The code the page does not
  // show goes back in its place, as cells that are never drawn.
  const cellIndex = element => +[...element.classList].find(c => c.startsWith("tied-cell-")).slice(10);
  const markCells = () => {
    const containers = [...document.querySelectorAll('.cell[class*="tied-cell-"]')];
    for (const container of containers) {
      const code = container.querySelector(".cell_input pre");
      if (!code) continue;   // remove-input: its code is among the hidden cells
      code.dataset.executable = "true";
      code.dataset.language = "python";
      container.querySelectorAll("button.copybtn").forEach(copy => copy.remove());
      let output = container.querySelector(".cell_output");
      if (!output) {
        output = document.createElement("div");
        container.querySelector(".cell_input").after(output);
      }
      output.dataset.output = "";
    }
    for (const [index, source] of Object.entries(PAGE.hidden)) {
      const hidden = document.createElement("div");
      hidden.className = "tied-hidden-cell";
      hidden.hidden = true;
      const code = document.createElement("pre");
      code.dataset.executable = "true";
      code.textContent = source;
      const output = document.createElement("div");
      output.dataset.output = "";
      hidden.append(code, output);
      const next = containers.find(c => cellIndex(c) > +index);
      if (next) next.before(hidden);
      else (containers[containers.length - 1] || bar).after(hidden);
      containers.splice(next ? containers.indexOf(next) : containers.length, 0, hidden);
      hidden.classList.add(`tied-cell-${index}`);
    }
  };

  // Running a cell first runs, in page order, every cell above it that has not run in this
  // kernel: the imports, the helpers and the glue the page hides, as at build time.
  const runInOrder = notebook => {
    const ran = new Set();
    const runs = new Map(notebook.cells.map(cell => [cell.id, cell.execute.bind(cell)]));
    // Math in an output, with the book's MathJax (thebe's own is off).
    const typeset = cell => {
      const box = document.querySelector(`[data-thebe-id="${cell.id}"]`);
      const output = box && box.closest(".cell") && box.closest(".cell").querySelector("[data-output]");
      const mathjax = window.MathJax;
      if (output && mathjax && mathjax.typesetPromise) {
        output.classList.add("mathjax_process");
        mathjax.typesetPromise([output]).catch(() => {});
      }
    };
    for (const cell of notebook.cells) {
      cell.execute = async source => {
        for (const earlier of notebook.cells.slice(0, notebook.cells.indexOf(cell))) {
          if (ran.has(earlier.id)) continue;
          ran.add(earlier.id);
          const result = await runs.get(earlier.id)();
          if (result && result.error) {
            const [error] = result.error;
            say("error", `A cell above this one failed: <code></code>`);
            status.querySelector("code").textContent = `${error.ename}: ${error.evalue}`;
          }
        }
        ran.add(cell.id);
        const result = await runs.get(cell.id)(source);
        typeset(cell);
        return result;
      };
    }
  };

  // thebe fetches require.js from cdnjs the first time a cell shows a widget; the book has
  // its own copy, which tools/offline_assets.py puts in _static/vendor/requirejs.
  const REQUIREJS_CDN = "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js";
  const fetchFromTheWeb = window.fetch;
  window.fetch = (resource, options) => fetchFromTheWeb(
    resource === REQUIREJS_CDN ? STATIC + "vendor/requirejs/require.js" : resource, options);

  const loadThebe = () => new Promise((resolve, reject) => {
    if (window.thebe && window.thebe.bootstrap) return resolve(window.thebe);
    const css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = STATIC + "vendor/thebe/thebe.css";
    document.head.append(css);
    const script = document.createElement("script");
    script.src = STATIC + "vendor/thebe/index.js";   // its chunks load from the same folder
    script.onload = () => resolve(window.thebe);
    script.onerror = () => reject(new Error(`${script.src} did not load`));
    document.head.append(script);
  });

  const start = async () => {
    const live = server();
    if (!live || location.protocol === "file:") {
      say("no-server", `The code of this page runs on a Jupyter server on your machine: ${OFFLINE}.`);
      return;
    }
    say("starting", "Connecting to the Jupyter server…");
    try {
      const answer = await fetch(new URL("api/status", live.url.replace(/\/?$/, "/")),
                                 {headers: {Authorization: `token ${live.token}`}});
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    } catch (error) {
      say("no-server", `The Jupyter server at <code></code> does not answer (<span></span>): ${OFFLINE}.`);
      status.querySelector("code").textContent = live.url;
      status.querySelector("span").textContent = error.message;
      return;
    }
    button.disabled = true;
    say("starting", "Starting a Python kernel…");
    try {
      const thebe = await loadThebe();
      markCells();
      const {notebook, session} = await thebe.bootstrap({
        useBinder: false,
        useJupyterLite: false,
        requestKernel: true,
        serverSettings: {baseUrl: live.url, token: live.token, appendToken: true},
        kernelOptions: {kernelName: "python3", path: PAGE.path},
        mathjaxUrl: "",   // the book has its own MathJax; thebe would load MathJax 2 from a CDN
        mountStatusWidget: false,
        mountActivateWidget: false,
        mountRunAllButton: false,
        mountRestartButton: false,
        mountRestartAllButton: false,
        codeMirrorConfig: {lineNumbers: false},
      });
      if (!session) throw new Error("no kernel");
      runInOrder(notebook);
      button.hidden = true;
      say("ready", "Live: edit a cell, then press <em>run</em> or Shift-Enter. A cell first runs the "
          + "cells above it that have not run yet, hidden ones included.");
    } catch (error) {
      button.disabled = false;
      say("error", `The kernel did not start (<span></span>): ${HOW}.`);
      status.querySelector("span").textContent = error.message || error;
    }
  };
  button.addEventListener("click", start);
})();
