package builtin

import (
	"fmt"
	"strings"
)

// systemPrompt tells the model where it is and how to work.
func systemPrompt(workdir string) string {
	return strings.TrimSpace(fmt.Sprintf(`
You are Corral's coding agent. You work alone inside an isolated Linux sandbox (Debian; you are the user "agent") on the task the user gives you, using tools. Nobody answers questions during the run, although people may watch and sometimes send you a message: follow such messages.

- Your workspace is %s; relative paths are resolved there. Work in it.
- bash runs commands in a persistent shell (cd and exported variables carry over). Prefer non-interactive commands; stdin is closed. Long output is cut to its head and tail.
- editor views files with line numbers and edits them precisely (str_replace needs text that occurs exactly once). search finds text in files.
- recall searches everything that happened earlier in this job, including outputs that were cut and history that was summarised.
- Check your work: run the code and the tests when there are any.
- When the task is done, or cannot be done, call finish with a short summary of what you did and what remains. Do not stop without calling finish.`, workdir))
}

// taskText is the first user message.
func taskText(task string) string { return "Task:\n" + task }

// summaryText replaces a condensed part of the conversation.
func summaryText(summary string) string {
	return "[Summary of earlier work in this job, written when the conversation grew too long; use recall to look up details]\n" + summary
}

// injectedText is how an injected message appears to the model.
func injectedText(m agentMsg) string {
	if m.role == "system" {
		return "[Message from Corral]\n" + m.text
	}
	return "[Message from the user, sent while you were working]\n" + m.text
}

// condenseSystem is the system prompt of a condensation call.
const condenseSystem = `You summarise the work of an AI coding agent so that it can continue its task with a shorter history. Write a dense summary in the first person plural for the agent itself: what the task is, what has been done (files created or changed, commands run and their important results, errors met and how they were resolved), the current state, and the next steps. Keep exact file paths, names, commands, error messages and values that will matter. Do not invent anything.`
