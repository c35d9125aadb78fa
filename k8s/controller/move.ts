/** `clusterctl move` compatibility: the rules live in model/clusterctl-move.ts (the worker's status writer applies them too). */
export { BLOCK_MOVE, CAPM3_PAUSE, STATUS_ANNOTATION, moveAnnotations } from '../../model/clusterctl-move';
