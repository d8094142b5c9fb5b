-- Built-in skills: the business pack's and the agent skills pack's tools grouped into skills an agent can
-- be given, each with instructions for the LLM. They are ordinary rows (is_builtin marks them, so the API
-- refuses to delete them); change their instructions or assignments freely. A skill naming a tool the
-- registry lacks simply gives that tool to nobody.

-- +goose Up

INSERT INTO skills (slug, name, category, is_builtin, description, tools, instructions) VALUES
('notes-tasks', 'Notes and tasks', 'office', true,
 'Save and search notes; create, update, defer, complete and list tasks.',
 '{os.create_note,os.search_notes,os.create_task,os.update_task,os.complete_task,os.defer_task,os.list_tasks}',
 $md$Keep the user's notes and to-do list.

- Search notes before saying you do not know something the user may have written down.
- A task needs a short title in the imperative ("Call Ann about the gutters"). Use priority urgent only when the user says so (urgent, asap, today).
- To finish or defer a task you need its id: list tasks first if you do not have it.$md$),
('reminders', 'Reminders', 'office', true,
 'Set, list and resolve reminders at a time.',
 '{os.create_reminder,os.list_reminders,os.complete_reminder,os.dismiss_reminder}',
 $md$Reminders fire at a time; tasks do not. Use a reminder when the user names a time ("remind me at 3pm"). Times are in the business's time zone; give remind_at as an RFC 3339 date-time.$md$),
('crm', 'Customers and leads', 'sales', true,
 'Record leads, move them through the pipeline, keep customers, suppliers and sites.',
 '{leads.create,leads.update_stage,leads.list_by_stage,leads.add_source,leads.add_photos_link,leads.mark_lost,entity.create,entity.update,entity.get,entity.search}',
 $md$A lead is a possible customer, one per phone number: creating a lead whose phone is on file returns the existing lead.

Pipeline stages: new → contacted → inspection_scheduled → inspected → quoted → won, or lost (always with a reason). Move a lead forward as things happen; never skip to won before a quote is accepted.$md$),
('inspections', 'Roof inspections', 'operations', true,
 'Book inspections and record what was found: checklist, measurements, photos, defects.',
 '{leads.schedule_inspection,inspection.create,inspection.get,inspection.add_checklist_item,inspection.add_measurement,inspection.add_photo_ref,inspection.add_defect,inspection.submit,inspection.reopen,inspection.lock}',
 $md$An inspection belongs to a lead. Record measurements with their units (roof area in m2, pitch in degrees, lengths in m) and every defect with a severity (low, medium, high, critical).

Submit the inspection when it is complete; a submitted inspection refuses edits until it is reopened, and a locked one refuses everything.$md$),
('quoting', 'Quoting', 'sales', true,
 'Turn a submitted inspection into a quote, price it, and track its answer.',
 '{quote.create_from_inspection,quote.add_line_item,quote.update_line_item,quote.calculate_totals,quote.mark_sent,quote.mark_accepted,quote.mark_declined}',
 $md$Money is in integer cents and excludes GST; calculate_totals adds 10% GST. Always calculate totals after changing line items and before marking a quote sent. Only the customer accepts or declines a quote: record it when the user tells you they did.$md$),
('jobs', 'Jobs', 'operations', true,
 'Create the job for an accepted quote, schedule it, keep site notes, complete it.',
 '{job.create_from_accepted_quote,job.assign_dates,job.add_site_notes,job.complete}',
 $md$A job comes from an accepted quote (one job per quote). Dates are calendar dates (YYYY-MM-DD). Complete a job only when the work is finished.$md$),
('invoicing', 'Invoicing', 'finance', true,
 'Invoice completed jobs, record payments, find overdue invoices.',
 '{invoice.create_from_job,invoice.add_payment,invoice.mark_overdue,invoice.list_overdue}',
 $md$An invoice's amount comes from the job's accepted quote. Record each payment in cents with its method; the invoice's balance and status follow (unpaid, partially paid, paid). A payment larger than the balance is refused.$md$),
('comms', 'Calls and messages', 'sales', true,
 'Log call outcomes, create follow-ups, send SMS and email.',
 '{comms.log_call_outcome,comms.create_followup_task,comms.send_sms,comms.send_email}',
 $md$Sending an SMS or an email cannot be undone and is never retried: confirm the text with the user before you send, and do not send the same message twice. If sending is not configured, say so and suggest a follow-up task instead.$md$),
('media', 'Photos and files', 'operations', true,
 'Register photos and documents and tag them.',
 '{media.register_asset,media.tag_asset}',
 $md$Register a file once (by its file reference) and tag it with what it shows (roof, gutter, defect, before, after).$md$),
('memory', 'Memory', 'agent', true,
 'Remember facts about the people the agent talks to, and recall them.',
 '{memory.store,memory.recall}',
 $md$Store short facts worth keeping about the user (preferences, promises, events) with a kind and tags. Recall before answering questions about the past. Never store secrets such as passwords or card numbers.$md$),
('lore', 'Knowledge', 'agent', true,
 'Search the knowledge base (and add documents to it).',
 '{lore.query,lore.ingest}',
 $md$Answer questions about the world or the business from the knowledge base: query it, and cite the source of what you use. If nothing relevant comes back, say you do not know rather than guessing.$md$),
('sentiment', 'Sentiment', 'agent', true,
 'Read the tone of a message.',
 '{sentiment.analyze}',
 $md$Use sentiment analysis on customer messages that may be complaints, so unhappy customers are noticed and followed up.$md$),
('web-research', 'Web research', 'agent', true,
 'Search the web.',
 '{web.search}',
 $md$Search the web for current facts (prices, regulations, weather, suppliers). Cite the pages you used.$md$),
('images', 'Image generation', 'agent', true,
 'Generate images from a description.',
 '{image.generate}',
 $md$Generating an image costs money and is never retried: ask before generating, and describe exactly what you want.$md$),
('audit', 'Audit', 'admin', true,
 'Check that GEM works and search past calls and receipts.',
 '{os.health_check,os.audit_log_search}',
 $md$Use the audit log to answer "what happened" questions: search receipts by tool, status and time, and report what you find.$md$);

-- Quotes are priced from inspections, jobs come from quotes, invoices from jobs; follow-ups are about leads.
INSERT INTO skill_dependencies (skill_id, requires_skill_id)
SELECT s.id, r.id FROM (VALUES ('quoting', 'inspections'), ('jobs', 'quoting'), ('invoicing', 'jobs'), ('comms', 'crm'),
                               ('inspections', 'crm')) d(skill, requires)
JOIN skills s ON s.slug = d.skill JOIN skills r ON r.slug = d.requires;

-- A ready assistant for a trades business, with every business skill, memory and knowledge.
INSERT INTO agents (slug, name, instructions, max_tool_iterations) VALUES
('office-assistant', 'Office assistant',
 $md$You are the office assistant of a roofing business. You help the owner and staff run the day: leads, inspections, quotes, jobs, invoices, notes, tasks and reminders.

Be brief and concrete. Use the tools to do things rather than describing how; report what each call did, with the numbers (quote totals, balances) and ids the user will need next. If a tool fails, say what failed and what you need to fix it.$md$,
 8);

INSERT INTO agent_skills (agent_id, skill_id, priority)
SELECT a.id, s.id, row_number() OVER (ORDER BY s.slug) * 10
FROM agents a, skills s
WHERE a.slug = 'office-assistant'
  AND s.slug IN ('notes-tasks', 'reminders', 'crm', 'inspections', 'quoting', 'jobs', 'invoicing', 'comms', 'media', 'memory', 'lore', 'audit');

-- +goose Down
DELETE FROM agents WHERE slug = 'office-assistant';
DELETE FROM skills WHERE is_builtin;
