import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import type { ListResource } from '../resources.js';
import { type Retry, readRetry } from '../retry.js';
import type { PageRequest } from './pager.js';
import { type Page, readPage } from './readPage.js';

/** How a read waits between attempts and what stops it (the run's options). */
export interface ReadOptions {
  sleep?: ((ms: number) => Promise<void>) | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * One page's read from the operator, started when it is created: the request, the page once its
 * head is read, and the retry budget of that page (a streamed body that breaks while it is written
 * is read again within the same attempts). A read started ahead of its turn (pipelining) is
 * cancelled when the scan does not need it after all: its request and its retries stop, and its
 * failure is never reported.
 */
export class PageRead {
  readonly retry: Retry;
  /** Settles with the page, or with the error that ended its attempts. */
  page: Promise<Page>;
  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;

  constructor(
    private readonly ctx: AppContext,
    private readonly resource: ListResource,
    readonly request: PageRequest,
    options: ReadOptions,
  ) {
    this.signal = options.signal
      ? AbortSignal.any([options.signal, this.controller.signal])
      : this.controller.signal;
    this.retry = readRetry(ctx, { sleep: options.sleep, signal: this.signal }, 'page failed; retrying', {
      resource: resource.name,
      // The offset the scan stands at (the request starts one early when it re-reads an anchor).
      offset: request.offset + (request.anchor === null ? 0 : 1),
    });
    this.page = this.attempts();
  }

  /** Reads the page again within the same budget (its body broke while being written). */
  again(): Promise<Page> {
    this.page = this.attempts();
    return this.page;
  }

  /** Stops the read; whatever it ends with is dropped. */
  cancel(): void {
    this.controller.abort();
  }

  /**
   * Lets the request leave before the caller blocks the thread (a SQLite commit is synchronous):
   * one turn of the event loop is what got needs to write a GET on a kept-alive socket.
   */
  async sent(): Promise<void> {
    await nextTurn();
  }

  private attempts(): Promise<Page> {
    const { ctx, resource, request, signal } = this;
    const page = this.retry.run(async () =>
      readPage(
        // The stop signal cancels a page in flight too: a GET has no effect to lose, and the
        // checkpoint of the pages already written is kept.
        await ctx
          .operator()
          .list(
            resource.operation,
            resource.path,
            { limit: request.limit, offset: request.offset },
            { signal },
          ),
        request,
        resource,
      ),
    );
    // Awaited later, or never when cancelled: a failure meanwhile is not an unhandled rejection.
    page.catch(() => {});
    return page;
  }
}
