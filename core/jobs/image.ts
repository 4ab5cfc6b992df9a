/**
 * The container image reference a job names: the grammar every image must follow (the API checks it
 * on a bid, a host again on a spec that came over the network) and the full name engines read.
 */
import { SPEC_LIMITS } from './spec.ts';

// The Docker reference grammar (distribution/reference): [host[:port]/]name[:tag][@digest], where
// the name is lowercase components with `.`, `_`, `__` or dashes between alphanumerics.
const NAME_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const HOST_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const IMAGE_REFERENCE = new RegExp(
  `^(?:${HOST_COMPONENT}(?:\\.${HOST_COMPONENT})*(?::[0-9]+)?/)?${NAME_COMPONENT}(?:/${NAME_COMPONENT})*` +
    '(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$',
);

/** What an image reference must look like, said in a refusal. */
export const IMAGE_REFERENCE_RULE = 'a container image reference: [registry[:port]/]name[:tag][@sha256:<64 hex>], the name in lowercase';

/**
 * Whether `text` is an image reference a job may name: Docker's grammar, at most
 * `SPEC_LIMITS.imageBytes` (the grammar is ASCII, so characters are bytes).
 *
 * @example
 * isImageReference('localhost/busybox:test'); // true
 * isImageReference('Busybox'); // false: names are lowercase
 */
export function isImageReference(text: string): boolean {
  return text.length <= SPEC_LIMITS.imageBytes && IMAGE_REFERENCE.test(text);
}

/**
 * The full name of an image reference, as engines read it: a bare name is an official Docker Hub
 * image (`busybox` → `docker.io/library/busybox`), a path without a registry host is on Docker Hub.
 */
export function normalizeImage(reference: string): string {
  const slash = reference.indexOf('/');
  if (slash < 0) return `docker.io/library/${reference}`;
  const first = reference.slice(0, slash);
  if (first === 'localhost' || first.includes('.') || first.includes(':')) return reference;
  return `docker.io/${reference}`;
}
