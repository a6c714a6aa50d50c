"""A small ResNet (torchvision's BasicBlock layout), ported by renaming.

conv3x3 / BatchNorm2d / ReLU(inplace=True) blocks with `out += identity` and a 1x1
convolution + BatchNorm2d downsample on the shortcut where the stride or width changes,
kaiming_normal_(mode="fan_out") and constant_ initialization through `self.modules()`,
AdaptiveAvgPool2d, SGD with nesterov momentum and weight decay, CrossEntropyLoss; then the
running statistics and the eval-mode outputs. The data: 3x8x8 images whose class is the
brightest channel.
"""

import numpy as np
import pytest
from port_common import LOSS_TOL, assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn


def make_data(n=64, seed=7):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.normal(size=(n, 3, 8, 8)).astype(np.float32)
    x[np.arange(n), y] += 1.0
    return x, y.astype(np.int64)


def build(torch):
    nn = torch.nn

    def conv3x3(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)

    def conv1x1(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class ResNet(nn.Module):
        def __init__(self, layers=(1, 1), num_classes=3):
            super().__init__()
            self.inplanes = 8
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = self._make_layer(8, layers[0])
            self.layer2 = self._make_layer(16, layers[1], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16 * BasicBlock.expansion, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def _make_layer(self, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes * BasicBlock.expansion:
                downsample = nn.Sequential(
                    conv1x1(self.inplanes, planes * BasicBlock.expansion, stride),
                    nn.BatchNorm2d(planes * BasicBlock.expansion),
                )
            layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes * BasicBlock.expansion
            for _ in range(1, blocks):
                layers.append(BasicBlock(self.inplanes, planes))
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.relu(x)
            x = self.layer1(x)
            x = self.layer2(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            x = self.fc(x)
            return x

    return ResNet()


def train(torch, model, data, epochs=2, wrap=identity):
    x, y = data
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4
    )

    @wrap
    def train_step(images, target):
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, output

    losses, correct = [], 0
    model.train()
    for _epoch in range(epochs):
        for i in range(0, len(x), 16):
            images, target = torch.from_numpy(x[i : i + 16]), torch.from_numpy(y[i : i + 16])
            loss, output = train_step(images, target)
            losses.append(loss.item())
            correct += (output.argmax(1) == target).sum().item()
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(x))
    return losses, correct, logits.numpy()


def test_resnet_learns():
    model = build(kn)
    losses, _, logits = train(kn, model, make_data(), epochs=4)
    assert np.mean(losses[-4:]) < 0.7 * np.mean(losses[:4])
    assert (logits.argmax(1) == make_data()[1]).mean() > 0.7
    assert model.layer1[0].bn1.num_batches_tracked.item() == 16


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_resnet_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_model, k_model = build(torch), build(kn)
    copy_weights(t_model, k_model)
    data = make_data()
    t_losses, t_correct, t_logits = train(torch, t_model, data)
    k_losses, k_correct, k_logits = train(
        kn, k_model, data, wrap=kn.compile if wrap == "compiled" else identity
    )
    assert_losses_close(k_losses, t_losses)
    assert k_correct == t_correct
    np.testing.assert_allclose(k_logits, t_logits, rtol=1e-3, atol=LOSS_TOL["atol"] * 10)
    assert_state_close(t_model, k_model)
