/* TileLang 算子课: small fixes to the book theme, loaded deferred in <head>.
 *
 * Sidebar toggles.  pydata-sphinx-theme >= 0.17 renders a second pair of
 * `.primary-toggle` / `.secondary-toggle` buttons in its top navbar, which
 * sphinx-book-theme always hides (`.bd-header button.sidebar-toggle {display:none}`).
 * Both themes bind their click handlers with `document.querySelector(".primary-toggle")`,
 * which finds that hidden copy first, so the visible ☰ and table-of-contents buttons do
 * nothing (pydata-sphinx-theme #2451, sphinx-book-theme #988).  This script runs after
 * the page is parsed and before the theme's deferred script (end of <body>) binds its
 * handlers: it removes the never-displayed copies, so the themes bind the visible
 * buttons -- the dialog on phones and tablets, collapsing the sidebar on desktops.
 *
 * MathJax's accessibility switch.  Turning on "Accessibility > Activate" (the explorer,
 * which reads formulas aloud) in MathJax 3.2.2's context menu loads the speech rule
 * engine and re-renders every formula; the re-render asks to be retried once the engine
 * is ready, but the menu does not retry it, so every formula on the page vanishes
 * (mathjax/MathJax #3124).  The menu's re-render is wrapped so that MathJax retries it.
 * The components it loads are served from the build (coursebook.sphinxext, _KEEP).
 */
(function () {
  "use strict";

  function dropHiddenToggles() {
    document
      .querySelectorAll(".bd-header .primary-toggle, .bd-header .secondary-toggle")
      .forEach(function (button) {
        // Only the copies the stylesheet never shows; a visible one stays.
        if (getComputedStyle(button).display === "none") button.remove();
      });
  }

  function retryMathMenuRerender() {
    var mj = window.MathJax;
    if (!mj || !mj.startup || !mj.startup.promise) return; // no math on this page
    mj.startup.promise.then(function () {
      var menu = mj.startup.document && mj.startup.document.menu;
      var core = mj._ && mj._.mathjax && mj._.mathjax.mathjax;
      if (!menu || !core || typeof menu.rerender !== "function" || menu.coursebookRetries) return;
      var rerender = menu.rerender;
      menu.rerender = function (start) {
        var self = this;
        return core.handleRetriesFor(function () { rerender.call(self, start); })
          .catch(function (err) { console.error("MathJax re-render failed:", err); });
      };
      menu.coursebookRetries = true;
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", dropHiddenToggles);
  } else {
    dropHiddenToggles();
  }
  // MathJax is a deferred script after this one: it has run by the load event.
  if (document.readyState === "complete") {
    retryMathMenuRerender();
  } else {
    window.addEventListener("load", retryMathMenuRerender);
  }
})();
