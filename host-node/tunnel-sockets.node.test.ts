import { socketsCompliance } from '../test/sockets-compliance.ts';
import { nodeTunnelSockets } from './tunnel-sockets.ts';

socketsCompliance('node:net sockets', nodeTunnelSockets);
