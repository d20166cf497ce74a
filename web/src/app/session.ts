// The logged-in session: the API client every page uses.

import { createContext, useContext } from "react";
import type { Client } from "../api/client";

export interface Session {
  client: Client;
  logout: (why?: string) => void;
}

export const SessionContext = createContext<Session | null>(null);

/** useSession is the session of a logged-in page. */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside a logged-in page");
  return s;
}
