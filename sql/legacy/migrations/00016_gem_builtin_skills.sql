-- The built-in skills follow GEM's registry: their tools are GEM's 105 (plus the tools that exist only
-- here), and their instructions describe GEM's contracts. New built-in skills cover GEM's domains that had
-- none: the owner's identity and personal life, the calendar, marketing, finance and integrations. The
-- office assistant gets the business ones. Built-in skills take the new definitions (their old tool names
-- are gone); skills people made are left alone.

-- +goose Up

CREATE TEMPORARY TABLE gem_skills_00016 (slug text PRIMARY KEY, name text, category text, description text, tools text[], instructions text)
    ON COMMIT DROP;

INSERT INTO gem_skills_00016 (slug, name, category, description, tools, instructions) VALUES
('notes-tasks', 'Notes and tasks', 'office',
 'Save and search notes; create, update, defer, complete and list tasks, for the business or personal life.',
 '{os.create_note,os.search_notes,os.create_task,os.update_task,os.complete_task,os.defer_task,os.list_tasks}',
 $md$Keep the user's notes and to-do list.

- Every note and task has a domain: business, personal or both. Work things are business; family, health and home are personal.
- Search notes before saying you do not know something the user may have written down.
- A task needs a short title in the imperative ("Call Ann about the gutters"); priority is low, normal or high (high only when the user says it is urgent). Tie it to a lead, job or quote with context_ref.
- To finish, change or defer a task you need its id: list tasks first if you do not have it. update_task takes a patch of the fields to change.$md$),
('reminders', 'Reminders', 'office',
 'Set, list and resolve reminders at a time.',
 '{os.create_reminder,os.list_reminders,os.complete_reminder,os.dismiss_reminder}',
 $md$Reminders fire at a time; tasks do not. Use a reminder when the user names a time ("remind me at 3pm"). Times are in the business's time zone; give remind_at as an RFC 3339 date-time, and say the domain (business or personal).$md$),
('crm', 'Customers and leads', 'sales',
 'Record leads, move them through the pipeline, keep customers, suppliers and their sites and interactions.',
 '{leads.create,leads.update_stage,leads.list_by_stage,leads.add_source,leads.add_photos_link,leads.mark_lost,entity.create,entity.update,entity.get,entity.search,entity.add_interaction,entity.add_address_site_details,entity.link_to_conversation}',
 $md$A lead is a possible customer, one per phone number: creating a lead whose phone is on file returns the existing lead. A lead needs a name, a phone and a suburb; ask for what is missing.

Pipeline stages: new → contacted → inspection_scheduled → quoted → won, or lost (always with a reason). Move a lead forward as things happen; never skip to won before a quote is accepted.

People and businesses that are not leads (clients, suppliers, partners) are entities; record calls, visits and messages with them as interactions.$md$),
('inspections', 'Roof inspections', 'operations',
 'Book inspections and record what was found: checklist, measurements, photos, defects; summarise the scope.',
 '{leads.schedule_inspection,inspection.create,inspection.get,inspection.add_checklist_item,inspection.add_measurement,inspection.add_photo_ref,inspection.add_defect,inspection.generate_scope_summary,inspection.submit,inspection.reopen,inspection.lock}',
 $md$An inspection belongs to a lead. Record measurements with a label, a value and a unit (roof area in m2, pitch in degrees, lengths in m), checklist items as pass, fail or na, and every defect with its category (tile, ridge, valley, flashing, gutter, leak, other) and severity (low, medium, high).

Generate the scope summary when the inspection is complete; lock it before quoting, since a locked inspection refuses edits.$md$),
('quoting', 'Quoting', 'sales',
 'Turn an inspection into a quote, price it, make its PDF, send it and track its answer.',
 '{quote.create_from_inspection,quote.update_line_items,quote.add_line_item,quote.update_line_item,quote.calculate_totals,quote.generate_pdf,quote.send_to_client,quote.mark_sent,quote.mark_accepted,quote.mark_declined}',
 $md$Money is in integer cents and excludes GST; calculate_totals adds 10% GST. Always calculate totals after changing line items and before making the PDF or sending the quote. Sending reaches the customer and cannot be undone: confirm with the user first. Only the customer accepts or declines a quote: record it when they tell you.$md$),
('jobs', 'Jobs', 'operations',
 'Create the job for an accepted quote, schedule it, record progress and photos, complete it, and issue its documents.',
 '{job.create_from_accepted_quote,job.assign_dates,job.add_site_notes,job.add_progress_update,job.add_before_after_refs,job.create_job_card,job.complete,job.generate_warranty_certificate,job.request_review}',
 $md$A job comes from an accepted quote (one job per quote). Dates are calendar dates (YYYY-MM-DD). Complete a job only when the work is finished; the warranty certificate needs a completed job. Asking for a review sends a message: confirm first.$md$),
('invoicing', 'Invoicing', 'finance',
 'Invoice completed jobs, send invoices and reminders, record payments, find overdue invoices.',
 '{invoice.create_from_job,invoice.send,invoice.add_payment,invoice.mark_overdue,invoice.list_overdue,invoice.send_reminder_sms,invoice.send_reminder_email}',
 $md$An invoice's amount comes from the job's accepted quote. Record each payment in cents with its method (cash, bank_transfer, card, other); the invoice's balance and status follow. A payment larger than the balance is refused. Sending an invoice or a reminder reaches the customer: confirm first, and never send the same reminder twice in a day.$md$),
('comms', 'Calls and messages', 'sales',
 'Draft and send SMS and email, log call outcomes, turn messages into follow-up tasks.',
 '{comms.compose_sms,comms.compose_email,comms.send_sms,comms.send_email,comms.log_call_outcome,comms.create_followup_task_from_message}',
 $md$Draft with compose_sms or compose_email (they fill a template from the lead, quote, job or invoice you name), show the draft, and send only once the user agrees: a sent message cannot be taken back, and GEM never sends one twice. Every send names what it is about (context_ref). If sending is not configured, say so and suggest a follow-up task instead.$md$),
('media', 'Photos and files', 'operations',
 'Register photos and documents, tag them, write alt text and captions, rename them and export a website pack.',
 '{media.register_asset,media.tag_asset,media.generate_alt_text,media.generate_caption,media.propose_rename_map,media.export_website_pack}',
 $md$Register a file once (by its file reference) with its type, job and suburb, and tag it with what it shows (roof, gutter, defect, before, after). Propose a rename map as a dry run first and apply it only when the user agrees.$md$),
('calendar', 'Calendar', 'operations',
 'Find free time, book, move and cancel events, and tie them to jobs and leads.',
 '{calendar.find_slots,calendar.create_event,calendar.update_event,calendar.cancel_event,calendar.attach_job_to_event}',
 $md$Look for free slots before booking. Times are RFC 3339 date-times in the business's time zone; an event ends after it starts. Say when a new event overlaps another. Cancel rather than delete, with a reason.$md$),
('marketing', 'Marketing', 'sales',
 'Draft ads, Google Business posts and case studies; schedule content and log campaign results.',
 '{marketing.generate_meta_ad_pack,marketing.generate_google_ads_pack,marketing.generate_case_study_from_job,marketing.generate_gmb_post,marketing.schedule_content,marketing.log_campaign_result}',
 $md$Drafts are written from the business's real jobs and photos: never invent results, prices or reviews. Show drafts to the user before scheduling them. Log campaign results with the numbers the user gives (spend, clicks, impressions, leads).$md$),
('finance', 'Finance', 'finance',
 'Record expenses; cash flow and profit and loss over a period.',
 '{finance.generate_cashflow_snapshot,finance.generate_pnl_snapshot,finance.add_expense}',
 $md$Periods are calendar dates (from, to). Amounts are integer cents; say whether a figure includes GST.$md$),
('identity', 'The owner', 'personal',
 'What the assistant knows about its owner: self-model, memories, patterns and boundaries.',
 '{identity.get_self_model,identity.update_self_model,identity.add_memory,identity.expire_memory,identity.list_memories,identity.score_pattern,identity.set_boundaries}',
 $md$Read the self-model and boundaries before advising the owner. Store a memory only when the owner states a preference, a fact or a commitment, or asks you to remember; a new value for a key replaces the old one. Respect boundaries (no calls after hours, days off) in everything you plan.$md$),
('personal', 'Personal', 'personal',
 'Check-ins, commitments and their reviews, boundaries, and structured help with decisions.',
 '{personal.check_in,personal.create_commitment,personal.review_commitments,personal.decision_support,personal.boundary_set}',
 $md$Keep personal matters personal: use the personal domain. A check-in records energy, stress and focus as the owner reports them; do not guess them. For a decision, lay out the options against the constraints and the owner's boundaries; the owner decides.$md$),
('integrations', 'Integrations', 'admin',
 'HighLevel sync, Google Drive and Photos, analytics and ads summaries, provider health.',
 '{integrations.highlevel.health_check,integrations.highlevel.sync_contacts,integrations.highlevel.sync_inspection,integrations.highlevel.sync_quote,integrations.highlevel.update_lead_stage,integrations.highlevel.process_sync_queue,integrations.google_drive.search,integrations.google_photos.import_links,integrations.analytics.pull_summary,integrations.ads.pull_summary,integrations.sms_provider.health,integrations.email_provider.health}',
 $md$An integration that is not configured answers not_configured with the variables it needs: tell the user which ones. Check a provider's health before blaming it for a failure.$md$),
('audit', 'Audit', 'admin',
 'Check that GEM works, search past calls and receipts, read the state of the business, undo a mistaken call.',
 '{os.health_check,os.audit_log_search,os.get_state_snapshot,os.refresh_state_snapshot,os.rollback_last_action}',
 $md$Use the audit log to answer "what happened" questions and the state snapshot for "where do things stand". Rolling back a call undoes its database changes; it cannot undo a message sent or a file written, and it refuses when later calls changed the same rows. Confirm with the user before rolling back.$md$);

-- Built-in skills take the new definitions; new ones are added.
UPDATE skills s SET name = g.name, category = g.category, description = g.description, tools = g.tools,
    instructions = g.instructions, updated_at = now()
FROM gem_skills_00016 g
WHERE s.slug = g.slug AND s.is_builtin;

INSERT INTO skills (slug, name, category, is_builtin, description, tools, instructions)
SELECT slug, name, category, true, description, tools, instructions FROM gem_skills_00016
ON CONFLICT (slug) DO NOTHING;

INSERT INTO skill_dependencies (skill_id, requires_skill_id)
SELECT s.id, r.id FROM (VALUES ('calendar', 'crm'), ('marketing', 'media'), ('finance', 'invoicing'), ('personal', 'identity')) d(skill, requires)
JOIN skills s ON s.slug = d.skill JOIN skills r ON r.slug = d.requires
ON CONFLICT DO NOTHING;

INSERT INTO agent_skills (agent_id, skill_id, priority)
SELECT a.id, s.id, 200 + row_number() OVER (ORDER BY s.slug) * 10
FROM agents a, skills s
WHERE a.slug = 'office-assistant' AND s.slug IN ('calendar', 'marketing', 'finance')
ON CONFLICT DO NOTHING;

-- +goose Down
-- Down removes the new skills and gives comms its old follow-up tool back; the other built-in skills keep
-- their new tool lists and instructions (00007's Down deletes every built-in skill).
DELETE FROM skills WHERE is_builtin AND slug IN ('calendar', 'marketing', 'finance', 'identity', 'personal', 'integrations');
UPDATE skills SET tools = array_replace(tools, 'comms.create_followup_task_from_message', 'comms.create_followup_task')
WHERE is_builtin AND slug = 'comms';
