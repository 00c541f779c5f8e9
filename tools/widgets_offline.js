// Loaded on pages with widgets, between require.js and the widget manager (nb_ipywidgets_js
// in _config.yml); tools/offline_assets.py copies it into _static/tied/.

// The widget manager's bundles load their icon fonts from the folder of their module's
// URL, which require.js derives from the module name ("@jupyter-widgets/controls",
// "@jupyter-widgets/html-manager/dist/libembed-amd", ...) under the page's own folder.
// Map those names to the folder where the fonts are copied, next to embed-amd.js.
const widgetFonts = new URL("../vendor/html-manager", document.currentScript.src).href;
require.config({
  paths: {"@jupyter-widgets": widgetFonts, "@jupyter-widgets/html-manager/dist": widgetFonts},
});

// ipywidgets 8 typesets widget descriptions with MathJax 2's MathJax.Hub.Queue; the book
// loads MathJax 3 (deferred, so it is there by DOMContentLoaded), whose call is typesetPromise.
document.addEventListener("DOMContentLoaded", () => {
  const mathjax = window.MathJax;
  if (mathjax && mathjax.typesetPromise && !mathjax.Hub) {
    mathjax.Hub = {
      Queue: (...jobs) => jobs.forEach(([, , element]) =>
        mathjax.startup.promise.then(() => mathjax.typesetPromise([element]))),
    };
  }
});
