// Vitest setup for component tests: jsdom lacks a few browser APIs the
// UI uses; Testing Library unmounts after each test.
import { afterEach } from "vitest";
import { cleanup } from "@testing-library/react";

const browser = typeof window !== "undefined";

afterEach(() => {
  if (!browser) return;
  cleanup();
  window.sessionStorage.clear();
  window.localStorage.clear();
});

if (browser && !("ResizeObserver" in window)) {
  class ResizeObserver {
    observe(): void {}
    unobserve(): void {}
    disconnect(): void {}
  }
  Object.assign(window, { ResizeObserver });
}

if (browser && !window.matchMedia) {
  Object.assign(window, {
    matchMedia: (query: string) => ({
      matches: false,
      media: query,
      addEventListener: () => {},
      removeEventListener: () => {},
    }),
  });
}

if (browser && !Element.prototype.scrollIntoView) {
  Element.prototype.scrollIntoView = function scrollIntoView(): void {};
}
