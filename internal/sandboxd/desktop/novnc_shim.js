// Corral's noVNC shim, put first in every noVNC page Corral serves.
//
// noVNC's pages load their files by relative URL, which a browser sends
// without credentials; behind Corral every request needs the token, which
// the page gets as ?access_token= (the control plane and sandboxd accept
// it there). The server renamed the page's src and href attributes to
// data-corral-src and data-corral-href so that nothing loads before this
// script has run. It then:
//   - maps every module of noVNC to its URL with the token (an import map),
//   - adds the token to fetch() calls for noVNC's files,
//   - puts the attributes back with the token, recreating scripts so they
//     run, and inlining stylesheets with the token added to their url()s,
//   - points noVNC at the desktop's VNC WebSocket beside this page (the
//     path parameter) and connects at once, unless the URL says otherwise.
// Without a token the page is left as it was, attributes restored.
(function () {
  "use strict";
  var modules = __MODULES__; // noVNC's .js files, relative to its root
  var root = new URL(__ROOT__, location.href); // noVNC's root directory
  var page = new URL(location.href);
  var params = page.searchParams;
  var token = params.get("access_token") || "";

  var vnc = new URL("../vnc", root).pathname.slice(1);
  if (token) {
    vnc += "?access_token=" + encodeURIComponent(token);
  }
  var defaults = { path: vnc, autoconnect: "true", resize: "scale", reconnect: "true" };
  var changed = false;
  Object.keys(defaults).forEach(function (k) {
    if (!params.has(k) && page.hash.indexOf(k + "=") < 0) {
      params.set(k, defaults[k]);
      changed = true;
    }
  });
  if (changed) {
    history.replaceState(history.state, "", page.href);
  }

  // withToken returns ref, resolved against base, with the token added
  // when it names one of noVNC's files.
  function withToken(ref, base) {
    var u = new URL(ref, base);
    if (!token || u.origin !== root.origin || u.pathname.indexOf(root.pathname) !== 0 ||
        u.searchParams.has("access_token")) {
      return u.href;
    }
    u.searchParams.set("access_token", token);
    return u.href;
  }

  var realFetch = window.fetch;
  if (token) {
    var imports = {};
    modules.forEach(function (m) {
      var u = new URL(m, root).href;
      imports[u] = withToken(u, root);
    });
    var map = document.createElement("script");
    map.type = "importmap";
    map.textContent = JSON.stringify({ imports: imports });
    document.currentScript.after(map);

    window.fetch = function (input, init) {
      if (typeof input === "string" || input instanceof URL) {
        input = withToken(String(input), document.baseURI);
      }
      return realFetch.call(this, input, init);
    };
  }

  function inlineStylesheet(el, href) {
    var base = new URL(href, document.baseURI);
    realFetch(withToken(href, document.baseURI)).then(function (r) {
      if (!r.ok) {
        throw new Error(r.status + " " + r.statusText);
      }
      return r.text();
    }).then(function (css) {
      css = css.replace(/url\(\s*(['"]?)([^'")]+)\1\s*\)/g, function (m, q, ref) {
        return /^(data:|#)/.test(ref) ? m : "url(" + q + withToken(ref, base) + q + ")";
      });
      var style = document.createElement("style");
      if (el.media) {
        style.media = el.media;
      }
      style.textContent = css;
      el.replaceWith(style);
    }).catch(function () {
      el.setAttribute("href", withToken(href, document.baseURI));
    });
  }

  function restore() {
    var media = [];
    document.querySelectorAll("[data-corral-src],[data-corral-href]").forEach(function (el) {
      ["src", "href"].forEach(function (name) {
        var ref = el.getAttribute("data-corral-" + name);
        if (ref === null) {
          return;
        }
        var url = withToken(ref, document.baseURI);
        if (el.tagName === "SCRIPT") {
          var s = document.createElement("script");
          Array.prototype.forEach.call(el.attributes, function (a) {
            if (a.name.indexOf("data-corral-") !== 0) {
              s.setAttribute(a.name, a.value);
            }
          });
          s.async = false; // keep the page's order
          s.src = url;
          el.replaceWith(s);
        } else if (el.tagName === "LINK" && /(^|\s)stylesheet(\s|$)/i.test(el.rel) && token) {
          inlineStylesheet(el, ref);
        } else {
          el.removeAttribute("data-corral-" + name);
          el.setAttribute(name, url);
          if (el.tagName === "SOURCE" && el.parentElement) {
            media.push(el.parentElement);
          }
        }
      });
    });
    media.forEach(function (m) {
      if (typeof m.load === "function") {
        m.load();
      }
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", restore);
  } else {
    restore();
  }
})();
