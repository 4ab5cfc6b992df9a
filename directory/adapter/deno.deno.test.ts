// Deno only: the whole service suite behind Deno.serve on a real socket.
import { serviceSuite, socketTarget } from '../testing/service-suite.ts';
import { serveDeno } from './deno-serve.ts';

serviceSuite('Deno.serve', socketTarget(serveDeno));
