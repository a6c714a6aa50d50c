"""Dive into Deep Learning's anchor boxes (14.4), ported by renaming `torch` to `kn`: a
from-scratch chapter of raw tensor ops (meshgrid, repeat/repeat_interleave, nonzero, argmax on a
flattened matrix, in-place row/column assignment, argsort, unique with counts, boolean-mask
updates). The book's example boxes are used; torch 2.13 is the oracle. Every output is a
closed form of at most a few float32 operations per element, so they agree within 1e-6.
"""

import numpy as np
from port_common import to_numpy

import kiln as kn


def anchor_lib(lib):
    torch = lib

    def box_corner_to_center(boxes):
        x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
        cx = (x1 + x2) / 2
        cy = (y1 + y2) / 2
        w = x2 - x1
        h = y2 - y1
        return torch.stack((cx, cy, w, h), axis=-1)

    def box_center_to_corner(boxes):
        cx, cy, w, h = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
        x1 = cx - 0.5 * w
        y1 = cy - 0.5 * h
        x2 = cx + 0.5 * w
        y2 = cy + 0.5 * h
        return torch.stack((x1, y1, x2, y2), axis=-1)

    def multibox_prior(data, sizes, ratios):
        in_height, in_width = data.shape[-2:]
        device, num_sizes, num_ratios = data.device, len(sizes), len(ratios)
        boxes_per_pixel = num_sizes + num_ratios - 1
        size_tensor = torch.tensor(sizes, device=device)
        ratio_tensor = torch.tensor(ratios, device=device)
        offset_h, offset_w = 0.5, 0.5
        steps_h = 1.0 / in_height
        steps_w = 1.0 / in_width
        center_h = (torch.arange(in_height, device=device) + offset_h) * steps_h
        center_w = (torch.arange(in_width, device=device) + offset_w) * steps_w
        shift_y, shift_x = torch.meshgrid(center_h, center_w, indexing="ij")
        shift_y, shift_x = shift_y.reshape(-1), shift_x.reshape(-1)
        w = (
            torch.cat(
                (size_tensor * torch.sqrt(ratio_tensor[0]), sizes[0] * torch.sqrt(ratio_tensor[1:]))
            )
            * in_height
            / in_width
        )
        h = torch.cat(
            (size_tensor / torch.sqrt(ratio_tensor[0]), sizes[0] / torch.sqrt(ratio_tensor[1:]))
        )
        anchor_manipulations = torch.stack((-w, -h, w, h)).T.repeat(in_height * in_width, 1) / 2
        out_grid = torch.stack([shift_x, shift_y, shift_x, shift_y], dim=1).repeat_interleave(
            boxes_per_pixel, dim=0
        )
        output = out_grid + anchor_manipulations
        return output.unsqueeze(0)

    def box_iou(boxes1, boxes2):
        box_area = lambda boxes: (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        areas1 = box_area(boxes1)
        areas2 = box_area(boxes2)
        inter_upperlefts = torch.max(boxes1[:, None, :2], boxes2[:, :2])
        inter_lowerrights = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
        inters = (inter_lowerrights - inter_upperlefts).clamp(min=0)
        inter_areas = inters[:, :, 0] * inters[:, :, 1]
        union_areas = areas1[:, None] + areas2 - inter_areas
        return inter_areas / union_areas

    def assign_anchor_to_bbox(ground_truth, anchors, device, iou_threshold=0.5):
        num_anchors, num_gt_boxes = anchors.shape[0], ground_truth.shape[0]
        jaccard = box_iou(anchors, ground_truth)
        anchors_bbox_map = torch.full((num_anchors,), -1, dtype=torch.long, device=device)
        max_ious, indices = torch.max(jaccard, dim=1)
        anc_i = torch.nonzero(max_ious >= iou_threshold).reshape(-1)
        box_j = indices[max_ious >= iou_threshold]
        anchors_bbox_map[anc_i] = box_j
        col_discard = torch.full((num_anchors,), -1)
        row_discard = torch.full((num_gt_boxes,), -1)
        for _ in range(num_gt_boxes):
            max_idx = torch.argmax(jaccard)
            box_idx = (max_idx % num_gt_boxes).long()
            anc_idx = (max_idx / num_gt_boxes).long()
            anchors_bbox_map[anc_idx] = box_idx
            jaccard[:, box_idx] = col_discard
            jaccard[anc_idx, :] = row_discard
        return anchors_bbox_map

    def offset_boxes(anchors, assigned_bb, eps=1e-6):
        c_anc = box_corner_to_center(anchors)
        c_assigned_bb = box_corner_to_center(assigned_bb)
        offset_xy = 10 * (c_assigned_bb[:, :2] - c_anc[:, :2]) / c_anc[:, 2:]
        offset_wh = 5 * torch.log(eps + c_assigned_bb[:, 2:] / c_anc[:, 2:])
        offset = torch.cat([offset_xy, offset_wh], axis=1)
        return offset

    def multibox_target(anchors, labels):
        batch_size, anchors = labels.shape[0], anchors.squeeze(0)
        batch_offset, batch_mask, batch_class_labels = [], [], []
        device, num_anchors = anchors.device, anchors.shape[0]
        for i in range(batch_size):
            label = labels[i, :, :]
            anchors_bbox_map = assign_anchor_to_bbox(label[:, 1:], anchors, device)
            bbox_mask = ((anchors_bbox_map >= 0).float().unsqueeze(-1)).repeat(1, 4)
            class_labels = torch.zeros(num_anchors, dtype=torch.long, device=device)
            assigned_bb = torch.zeros((num_anchors, 4), dtype=torch.float32, device=device)
            indices_true = torch.nonzero(anchors_bbox_map >= 0)
            bb_idx = anchors_bbox_map[indices_true]
            class_labels[indices_true] = label[bb_idx, 0].long() + 1
            assigned_bb[indices_true] = label[bb_idx, 1:]
            offset = offset_boxes(anchors, assigned_bb) * bbox_mask
            batch_offset.append(offset.reshape(-1))
            batch_mask.append(bbox_mask.reshape(-1))
            batch_class_labels.append(class_labels)
        bbox_offset = torch.stack(batch_offset)
        bbox_mask = torch.stack(batch_mask)
        class_labels = torch.stack(batch_class_labels)
        return (bbox_offset, bbox_mask, class_labels)

    def offset_inverse(anchors, offset_preds):
        anc = box_corner_to_center(anchors)
        pred_bbox_xy = (offset_preds[:, :2] * anc[:, 2:] / 10) + anc[:, :2]
        pred_bbox_wh = torch.exp(offset_preds[:, 2:] / 5) * anc[:, 2:]
        pred_bbox = torch.cat((pred_bbox_xy, pred_bbox_wh), axis=1)
        predicted_bbox = box_center_to_corner(pred_bbox)
        return predicted_bbox

    def nms(boxes, scores, iou_threshold):
        B = torch.argsort(scores, dim=-1, descending=True)
        keep = []
        while B.numel() > 0:
            i = B[0]
            keep.append(i)
            if B.numel() == 1:
                break
            iou = box_iou(boxes[i, :].reshape(-1, 4), boxes[B[1:], :].reshape(-1, 4)).reshape(-1)
            inds = torch.nonzero(iou <= iou_threshold).reshape(-1)
            B = B[inds + 1]
        return torch.tensor(keep, device=boxes.device)

    def multibox_detection(
        cls_probs, offset_preds, anchors, nms_threshold=0.5, pos_threshold=0.009999999
    ):
        device, batch_size = cls_probs.device, cls_probs.shape[0]
        anchors = anchors.squeeze(0)
        num_anchors = cls_probs.shape[2]
        out = []
        for i in range(batch_size):
            cls_prob, offset_pred = cls_probs[i], offset_preds[i].reshape(-1, 4)
            conf, class_id = torch.max(cls_prob[1:], 0)
            predicted_bb = offset_inverse(anchors, offset_pred)
            keep = nms(predicted_bb, conf, nms_threshold)
            all_idx = torch.arange(num_anchors, dtype=torch.long, device=device)
            combined = torch.cat((keep, all_idx))
            uniques, counts = combined.unique(return_counts=True)
            non_keep = uniques[counts == 1]
            all_id_sorted = torch.cat((keep, non_keep))
            class_id[non_keep] = -1
            class_id = class_id[all_id_sorted]
            conf, predicted_bb = conf[all_id_sorted], predicted_bb[all_id_sorted]
            below_min_idx = conf < pos_threshold
            class_id[below_min_idx] = -1
            conf[below_min_idx] = 1 - conf[below_min_idx]
            pred_info = torch.cat((class_id.unsqueeze(1), conf.unsqueeze(1), predicted_bb), dim=1)
            out.append(pred_info)
        return torch.stack(out)

    return multibox_prior, box_iou, multibox_target, multibox_detection


def run(lib):
    prior, iou, target, detect = anchor_lib(lib)
    X = lib.zeros((1, 3, 6, 8))  # only its shape is read
    Y = prior(X, sizes=[0.75, 0.5, 0.25], ratios=[1, 2, 0.5])
    ground_truth = lib.tensor([[0, 0.1, 0.08, 0.52, 0.92], [1, 0.55, 0.2, 0.9, 0.88]])
    anchors = lib.tensor(
        [
            [0, 0.1, 0.2, 0.3],
            [0.15, 0.2, 0.4, 0.4],
            [0.63, 0.05, 0.88, 0.98],
            [0.66, 0.45, 0.8, 0.8],
            [0.57, 0.3, 0.92, 0.9],
        ]
    )
    labels = target(anchors.unsqueeze(dim=0), ground_truth.unsqueeze(dim=0))
    anchors2 = lib.tensor(
        [
            [0.1, 0.08, 0.52, 0.92],
            [0.08, 0.2, 0.56, 0.95],
            [0.15, 0.3, 0.62, 0.91],
            [0.55, 0.2, 0.9, 0.88],
        ]
    )
    offset_preds = lib.tensor([0] * anchors2.numel())
    cls_probs = lib.tensor([[0] * 4, [0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.3, 0.9]])
    output = detect(
        cls_probs.unsqueeze(dim=0),
        offset_preds.unsqueeze(dim=0),
        anchors2.unsqueeze(dim=0),
        nms_threshold=0.5,
    )
    Yb = Y.reshape(6, 8, 5, 4)
    return [Y, Yb[2, 2, 0, :], iou(anchors, ground_truth[:, 1:]), *labels, output]


def test_anchor_boxes(torch):
    for t, k in zip(run(torch), run(kn)):
        assert tuple(k.shape) == tuple(t.shape)
        assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-6, atol=1e-6)
