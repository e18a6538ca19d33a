/**
 * A bulk job's page: what it does, how many rows it changed, in how many batches; it follows
 * itself (a meta refresh, and the script's progress bar) until the job ends.
 *
 * @module
 */
import type { BulkJob } from "../bulk-jobs.js";
import { html, type SafeHtml } from "../html.js";
import { layout, type PageContext } from "./layout.js";

/** The job page. */
export function jobPage(context: PageContext, job: BulkJob): SafeHtml {
  const body = html`<p><a href="${job.back}">← ${job.table}</a></p>
<h1>${job.description}</h1>
<section class="panel"${job.finished ? "" : html` data-job-url="${context.base}/jobs/${encodeURIComponent(job.id)}/progress.json"`}>
<p><strong data-job-done>${job.done}</strong> rows ${job.finished ? "changed" : "changed so far"}${job.total === null ? "" : html` of about ${job.total}`}, in ${job.batches} batch${job.batches === 1 ? "" : "es"}.
Started by ${job.user} at ${job.startedAt.toISOString()}.</p>
${job.finished ? "" : html`<progress${job.total === null ? "" : html` max="${job.total}" value="${job.done}"`}></progress>`}
<p data-job-state>${
    job.error !== undefined
      ? html`<span class="badge dead">stopped</span> ${job.error}`
      : job.finished
        ? html`<span class="badge inWork">finished</span>`
        : html`<span class="badge due">running</span>`
  }</p>
</section>`;
  return layout(context, job.description, body, job.finished ? {} : { refreshSeconds: 2 });
}
