console.log("vk-sandbox placeholder")
