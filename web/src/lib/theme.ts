// Light and dark: follows the system unless the user picked one, which is
// remembered in this browser. The choice is the data-theme attribute of
// <html>, which the CSS variables key on.

export type ThemeChoice = "system" | "light" | "dark";

const key = "corral.theme";

export function loadTheme(): ThemeChoice {
  try {
    const v = window.localStorage.getItem(key);
    if (v === "light" || v === "dark") return v;
  } catch {
    // storage disabled
  }
  return "system";
}

export function effectiveTheme(choice: ThemeChoice): "light" | "dark" {
  if (choice !== "system") return choice;
  return window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function applyTheme(choice: ThemeChoice): void {
  try {
    if (choice === "system") window.localStorage.removeItem(key);
    else window.localStorage.setItem(key, choice);
  } catch {
    // storage disabled: the choice lasts for this page
  }
  document.documentElement.dataset["theme"] = effectiveTheme(choice);
  window.dispatchEvent(new Event("corral-theme"));
}

/** nextTheme cycles system → light → dark → system. */
export function nextTheme(c: ThemeChoice): ThemeChoice {
  return c === "system" ? "light" : c === "light" ? "dark" : "system";
}
