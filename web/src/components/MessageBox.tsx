// The chat box under a job's timeline: a message typed here is injected
// into the running agent (POST /v1/jobs/{id}/messages) and shows up in the
// timeline as the "user" message event the server appends.

import { useState, type FormEvent, type KeyboardEvent } from "react";
import type { Client } from "../api/client";
import { ErrorNote } from "./ui";

export function MessageBox({ client, jobID }: { client: Client; jobID: string }) {
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const send = async (e?: FormEvent): Promise<void> => {
    e?.preventDefault();
    const t = text.trim();
    if (!t || sending) return;
    setSending(true);
    setError(null);
    try {
      await client.sendMessage(jobID, t);
      setText("");
    } catch (err) {
      setError(err);
    } finally {
      setSending(false);
    }
  };

  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>): void => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      void send();
    }
  };

  return (
    <form className="message-box" onSubmit={(e) => void send(e)}>
      <ErrorNote error={error} doing="Sending the message" />
      <div className="message-row">
        <textarea
          className="input message-input"
          rows={2}
          placeholder="Message the agent (Enter sends, Shift+Enter for a new line)"
          aria-label="Message to the agent"
          value={text}
          disabled={sending}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={onKey}
        />
        <button type="submit" className="btn btn-primary" disabled={sending || text.trim() === ""}>
          {sending ? "Sending…" : "Send"}
        </button>
      </div>
    </form>
  );
}
