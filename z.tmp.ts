import { startPodman } from './test/podman.ts';
await startPodman();
